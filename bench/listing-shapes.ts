/**
 * The listing searches the benchmarks measure at scale (bench/listings.ts sequentially, bench/http.ts
 * under wrk): query shapes a customer's documents use, each rotating through variants over all eight
 * countries so that no single cached page is measured.
 */
import type { Country } from '../src/domain/market/vocabulary.ts'

export const COUNTRIES: Country[] = ['GT', 'BR', 'PA', 'CR', 'DO', 'SV', 'HN', 'BZ']
export type Shape = { name: string; variants: string[] }
const query = (params: Record<string, string | number>) => new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)])).toString()
/** Each shape rotates through variants over all countries, so no single cached page is measured. */
export const SHAPES: Shape[] = [
  {
    name: 'country + zone + operation',
    variants: COUNTRIES.flatMap((country) =>
      [1, 4, 9].flatMap((zone) => ['Venta', 'Renta'].map((operation) => query({ country, zone: `Zona ${zone}`, operation }))),
    ),
  },
  {
    name: 'country + zone + operation, sort by price',
    variants: COUNTRIES.flatMap((country) =>
      ['Venta', 'Renta'].flatMap((operation) =>
        ['price_asc', 'price_desc'].map((sort) => query({ country, zone: `Zona ${country === 'GT' ? 1 : 3}`, operation, sort })),
      ),
    ),
  },
  {
    name: 'country + property type + price range',
    variants: COUNTRIES.flatMap((country) => [
      query({ country, property_type: 'Apartamento', price_min: 100000, price_max: 250000 }),
      query({ country, property_type: 'Casa', price_min: 150000, price_max: 400000 }),
      query({ country, property_type: 'Oficina', price_min: 500, price_max: 3000 }),
    ]),
  },
  {
    name: 'country + operation, sort by price',
    variants: COUNTRIES.flatMap((country) =>
      ['Venta', 'Renta'].flatMap((operation) => ['price_asc', 'price_desc'].map((sort) => query({ country, operation, sort }))),
    ),
  },
  {
    name: 'zone + operation + type + price range, sort=price_desc',
    variants: COUNTRIES.flatMap((country) => [
      query({ country, zone: 'Zona 2', operation: 'Venta', property_type: 'Casa', price_min: 100000, price_max: 500000, sort: 'price_desc' }),
      query({ country, zone: 'Zona 5', operation: 'Renta', property_type: 'Apartamento', price_max: 1500, sort: 'price_desc' }),
    ]),
  },
  {
    name: 'country only, first page (newest)',
    variants: COUNTRIES.map((country) => query({ country })),
  },
  {
    name: 'deep page: offset=2000',
    variants: COUNTRIES.flatMap((country) => [
      query({ country, offset: 2000 }),
      query({ country, zone: 'Zona 1', sort: 'price_desc', offset: 2000 }),
    ]),
  },
]
/** The one query wrk hammers: the typical search of the customer's documents. */
export const WRK_QUERY = query({ country: 'GT', zone: 'Zona 4', operation: 'Venta' })
