import { type Static, Type } from '@sinclair/typebox'

/**
 * The market's shared vocabulary: the closed sets every feed line, event, read model and
 * endpoint agrees on. Values are spelled as the customer's documents spell them.
 */
const L = Type.Literal
const values = <T extends string>(union: { anyOf: { const: T }[] }): readonly T[] => union.anyOf.map((member) => member.const)

export const Country = Type.Union([L('GT'), L('SV'), L('HN'), L('CR'), L('BZ'), L('DO'), L('PA'), L('BR')])
export type Country = Static<typeof Country>
export const COUNTRIES = values(Country)

export const Currency = Type.Union([L('USD'), L('GTQ'), L('HNL'), L('CRC'), L('DOP'), L('BZD'), L('BRL'), L('PAB')])
export type Currency = Static<typeof Currency>
export const CURRENCIES = values(Currency)

export const Operation = Type.Union([L('Venta'), L('Renta')])
export type Operation = Static<typeof Operation>
export const OPERATIONS = values(Operation)

export const PropertyType = Type.Union([L('Apartamento'), L('Casa'), L('Terreno'), L('Oficina'), L('Local'), L('Bodega')])
export type PropertyType = Static<typeof PropertyType>
export const PROPERTY_TYPES = values(PropertyType)

export const Source = Type.Union([L('broker'), L('scraped')])
export type Source = Static<typeof Source>
export const SOURCES = values(Source)

/** Bedroom groups of the zone detail: four or more bedrooms are one group. */
export const BedroomGroup = Type.Union([L('0'), L('1'), L('2'), L('3'), L('4+')])
export type BedroomGroup = Static<typeof BedroomGroup>
export const BEDROOM_GROUPS = values(BedroomGroup)
export const bedroomGroup = (bedrooms: number): BedroomGroup => (bedrooms >= 4 ? '4+' : (String(bedrooms) as BedroomGroup))

/** Currencies a listing in each country may be priced in: the local one and the US dollar. */
export const COUNTRY_CURRENCIES: Record<Country, readonly Currency[]> = {
  GT: ['GTQ', 'USD'],
  SV: ['USD'],
  HN: ['HNL', 'USD'],
  CR: ['CRC', 'USD'],
  BZ: ['BZD', 'USD'],
  DO: ['DOP', 'USD'],
  PA: ['PAB', 'USD'],
  BR: ['BRL', 'USD'],
}
