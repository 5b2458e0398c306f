import { type Static, Type } from '@sinclair/typebox'
import { Country, Operation, PropertyType } from './vocabulary.ts'

/** The records of GET /estimate (docs/statistics.md, "Estimates", defines every figure). Amounts in USD, rounded once to cents. */

export const Confidence = Type.Union([Type.Literal('high'), Type.Literal('medium'), Type.Literal('low')], {
  description: 'high: ≥ 8 comparables, widened at most to level 2, high − low ≤ 50 % of the price; medium: level ≤ 3 and ≤ 100 %; else low',
})
export type Confidence = Static<typeof Confidence>

export const EstimateFigures = Type.Object({
  price_usd: Type.Number({ description: 'the median price per m² of the comparables (exact) × area_m2: a sale price, or a monthly rent for Renta' }),
  price_per_m2_usd: Type.Number({ description: 'the median of the comparables’ exact prices per m²' }),
  low_usd: Type.Number({ description: '10th percentile (nearest rank) of the comparables’ prices per m² × area_m2' }),
  high_usd: Type.Number({ description: '90th percentile (nearest rank) of the comparables’ prices per m² × area_m2' }),
  confidence: Confidence,
})
export type EstimateFigures = Static<typeof EstimateFigures>

export const UsedComparable = Type.Object({
  listing_id: Type.String({ description: 'the id of the public listing (as in /listings)' }),
  area_m2: Type.Number(),
  bedrooms: Type.Integer(),
  bathrooms: Type.Number(),
  price_usd: Type.Number({ description: 'its price (monthly rent for Renta) at the instant' }),
  price_per_m2_usd: Type.Number({ description: 'price_usd / area_m2 rounded once to cents (the exact quotient is what the figures use)' }),
  adjusted_price_usd: Type.Number({ description: 'its exact price per m² × the subject’s area_m2: what it says the property is worth' }),
  distance: Type.Number({ description: '|ln(area / area_m2)| + 0.25 × bedrooms apart + 0.1 × bathrooms apart (terms of given inputs only), 6 decimals; the order' }),
  similarity: Type.Number({ description: '1 / (1 + distance), 4 decimals (1 is identical)' }),
})
export type UsedComparable = Static<typeof UsedComparable>

const Level = Type.Union([Type.Literal(1), Type.Literal(2), Type.Literal(3), Type.Literal(4)])

export const EstimateMethod = Type.Object({
  version: Type.Integer({ description: 'the method of docs/statistics.md this answer follows' }),
  level: Type.Union([Level, Type.Null()], {
    description: 'how far the search widened: 1 same bedrooms and area ±25 %, 2 area ±25 %, 3 area ±50 %, 4 any area; null: no estimate',
  }),
  candidates: Type.Integer({ description: 'public listings of the zone, operation and property type at the instant' }),
  kept: Type.Integer({ description: 'candidates the level kept' }),
  used: Type.Integer({ description: 'comparables used and shown: the closest kept ones, at most `comparables`' }),
  min_comparables: Type.Integer({ description: 'no estimate rests on fewer' }),
})
export type EstimateMethod = Static<typeof EstimateMethod>

export const EstimateResponse = Type.Object({
  ok: Type.Literal(true),
  country: Country,
  zone: Type.String(),
  slug: Type.String(),
  operation: Operation,
  property_type: PropertyType,
  area_m2: Type.Number(),
  bedrooms: Type.Union([Type.Integer(), Type.Null()], { description: 'as asked; null when not given' }),
  bathrooms: Type.Union([Type.Number(), Type.Null()], { description: 'as asked; null when not given' }),
  as_of: Type.Optional(Type.String({ description: 'the instant answered, with as_of only' })),
  estimate: Type.Union([EstimateFigures, Type.Null()], { description: 'null when even the widest level keeps fewer than min_comparables listings' }),
  reason: Type.Union([Type.Literal('too_few_comparables'), Type.Null()], { description: 'why estimate is null' }),
  comparables: Type.Array(UsedComparable, { description: 'closest first: every figure of the estimate is over exactly these' }),
  method: EstimateMethod,
})
export type EstimateResponse = Static<typeof EstimateResponse>
