import { type Static, Type } from '@sinclair/typebox'
import { BedroomGroup, Country, Operation, PropertyType, Source } from './vocabulary.ts'

/** The zone endpoints' records (docs/api.md, docs/statistics.md). Nullable numbers are medians under 3 listings. */
const NullableNumber = Type.Union([Type.Number(), Type.Null()])

const N_ACTIVE = Type.Integer({ description: 'active listings, every operation and source' })
const N_SALE = Type.Integer({ description: 'active Venta listings: the count the sale medians beside it are taken over' })

/** A breakdown row whose medians are over its active Venta listings (rents are monthly). */
const SaleFigures = {
  n_active: N_ACTIVE,
  n_sale: N_SALE,
  median_ppm2_usd: Type.Union([Type.Number(), Type.Null()], { description: 'median USD per m² of its Venta listings' }),
  median_price_usd: Type.Union([Type.Number(), Type.Null()], { description: 'median price in USD of its Venta listings' }),
}

/** A by_operation row: its medians are over its own listings, all n_active of them. */
const OperationFigures = {
  n_active: Type.Integer({ description: 'active listings of this operation: the count its medians are taken over' }),
  median_ppm2_usd: Type.Union([Type.Number(), Type.Null()], { description: 'median USD per m² (per month for Renta)' }),
  median_price_usd: Type.Union([Type.Number(), Type.Null()], { description: 'median price in USD (monthly rent for Renta)' }),
}

export const ZoneSummary = Type.Object({
  zone: Type.String(),
  slug: Type.String(),
  median_ppm2_usd: NullableNumber,
  n_active: N_ACTIVE,
  n_sale: N_SALE,
  median_dom: NullableNumber,
  median_price_usd: NullableNumber,
  change_30d_pct: NullableNumber,
  updated_at: Type.String(),
})
export type ZoneSummary = Static<typeof ZoneSummary>

export const ZoneDetail = Type.Object({
  zone: Type.String(),
  slug: Type.String(),
  country: Country,
  n_active: N_ACTIVE,
  n_sale: N_SALE,
  median_ppm2_usd: NullableNumber,
  median_price_usd: NullableNumber,
  median_dom: NullableNumber,
  by_property_type: Type.Array(Type.Object({ property_type: PropertyType, ...SaleFigures })),
  by_bedrooms: Type.Array(Type.Object({ bedrooms: BedroomGroup, ...SaleFigures })),
  by_operation: Type.Array(Type.Object({ operation: Operation, ...OperationFigures })),
  change_30d: Type.Object({
    median_ppm2_usd_now: NullableNumber,
    median_ppm2_usd_then: NullableNumber,
    pct: NullableNumber,
    n_active_now: Type.Integer(),
    n_active_then: Type.Integer(),
    n_sale_now: Type.Integer(),
    n_sale_then: Type.Integer(),
  }),
  source_mix: Type.Array(Type.Object({ source: Source, n: Type.Integer(), share: Type.Number() })),
  updated_at: Type.String(),
})
export type ZoneDetail = Static<typeof ZoneDetail>

/** The instant an answer is for, when a past one was asked (`as_of`). */
const AsOfAnswered = Type.Optional(Type.String({ description: 'the instant asked (as_of), when given: the market as it stood then' }))

export const ZonesResponse = Type.Object({
  ok: Type.Literal(true),
  country: Country,
  as_of: AsOfAnswered,
  count: Type.Integer(),
  zones: Type.Array(ZoneSummary),
})

export const ZoneDetailResponse = Type.Composite([
  Type.Object({ ok: Type.Literal(true), as_of: AsOfAnswered }),
  ZoneDetail,
])

/** One month of GET /zone/{slug}/history: the zone's figures at the month's end (or at the instant asked, for its own month). */
export const ZoneHistoryMonth = Type.Object({
  month: Type.String({ pattern: '^[0-9]{4}-(0[1-9]|1[0-2])$', description: 'calendar month (UTC), YYYY-MM' }),
  at: Type.String({ description: "the instant the figures are for: the month's last millisecond, or the instant asked for its own month" }),
  listed: Type.Boolean({ description: 'false before the zone had any listing: its figures are then null, not zeros' }),
  n_active: Type.Union([Type.Integer(), Type.Null()], { description: 'active listings, every operation and source' }),
  n_sale: Type.Union([Type.Integer(), Type.Null()], { description: 'active Venta listings' }),
  median_ppm2_usd: Type.Union([Type.Number(), Type.Null()], { description: 'median USD per m² of the Venta listings' }),
  median_price_usd: Type.Union([Type.Number(), Type.Null()], { description: 'median price in USD of the Venta listings' }),
  median_rent_usd: Type.Union([Type.Number(), Type.Null()], { description: 'median monthly rent in USD of the Renta listings' }),
  median_rent_ppm2_usd: Type.Union([Type.Number(), Type.Null()], { description: 'median monthly rent per m² in USD of the Renta listings' }),
  median_dom: Type.Union([Type.Number(), Type.Null()], { description: 'median days on market of the active listings at `at`' }),
})
export type ZoneHistoryMonth = Static<typeof ZoneHistoryMonth>

export const ZoneHistoryResponse = Type.Object({
  ok: Type.Literal(true),
  zone: Type.String(),
  slug: Type.String(),
  country: Country,
  as_of: Type.String({ description: 'the instant of the last month: the request time, or as_of' }),
  months: Type.Integer(),
  history: Type.Array(ZoneHistoryMonth, { description: 'one entry per calendar month, oldest first' }),
})
