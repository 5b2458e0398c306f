import { Type } from '@sinclair/typebox'
import { DEFAULT_COMPARABLES, MAX_COMPARABLES, MIN_COMPARABLES } from '../domain/market/estimate.ts'
import { OPERATIONS, PROPERTY_TYPES } from '../domain/market/vocabulary.ts'
import { ZoneInput } from '../domain/market/zone-name.ts'
import { httpInputs } from '../http/inputs.ts'
import { CountryParameter } from '../http/parameters.ts'
import { anyCaseOf, defaulted, expecting } from '../shared/input-schema.ts'
import { AsOfParameter, asOfProblems } from '../zones/point-in-time.ts'

/** The largest area an estimate is asked for: 100 hectares. */
const MAX_AREA_M2 = 1_000_000

/**
 * The query of GET /estimate: what the OpenAPI document shows and what reads the query string
 * (src/http/inputs.ts). The subject property and how many comparables to use and show.
 */
export const EstimateQuery = Type.Object({
  country: CountryParameter,
  zone: ZoneInput,
  operation: anyCaseOf(OPERATIONS, { description: 'Venta (a sale price) or Renta (a monthly rent)', examples: ['Venta'] }),
  property_type: anyCaseOf(PROPERTY_TYPES, { description: 'property type', examples: ['Casa'] }),
  area_m2: expecting(
    Type.Number({ minimum: 1, maximum: MAX_AREA_M2, description: "the property's area in m²", examples: [120] }),
    `Expected an area from 1 to ${MAX_AREA_M2} m² in decimal digits, e.g. 120 or 85.5`,
  ),
  bedrooms: Type.Optional(Type.Integer({ minimum: 0, maximum: 100, description: 'bedrooms: same-bedroom listings are preferred, and each bedroom of difference counts in the distance' })),
  bathrooms: Type.Optional(Type.Number({ minimum: 0, maximum: 100, description: 'bathrooms, a decimal (2.5): each of difference counts in the distance' })),
  comparables: defaulted(
    Type.Integer({ minimum: MIN_COMPARABLES, maximum: MAX_COMPARABLES, description: 'comparables used and shown' }),
    DEFAULT_COMPARABLES,
  ),
  as_of: AsOfParameter,
})

export const estimateInputs = httpInputs({ query: EstimateQuery, refine: ({ as_of }) => asOfProblems(as_of) })
