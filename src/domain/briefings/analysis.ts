import type { EstimateFigures } from '../market/estimate-figures.ts'
import type { Operation, PropertyType } from '../market/vocabulary.ts'
import type { SegmentStats, ZoneDetail, ZoneFacts } from './facts.ts'

/**
 * The language-neutral core of the local analyst: signals read from the zone statistics, each
 * with the figures it used and the points it adds to a persona's score. Pure functions only.
 */
export const CONFIDENCE_LEVELS = ['low', 'medium', 'high'] as const
export type Confidence = (typeof CONFIDENCE_LEVELS)[number]

export const LANGUAGES = ['es', 'en', 'pt'] as const
export type Language = (typeof LANGUAGES)[number]

export type Segment =
  | { kind: 'zone' }
  | { kind: 'property_type'; value: string }
  | { kind: 'bedrooms'; value: string }

/** A figure the analyst could not use; it is named in the briefing and lowers the confidence. */
export type MissingFigure =
  | 'price_vs_country'
  | 'momentum'
  | 'days_on_market'
  | 'gross_yield'
  | 'budget_segment'
  | 'asking_segment'
  | 'land_share'
  /** No asking price was given, so the broker verdict compares the zone with the country instead. */
  | 'asking_price'

/** Where an amount stands against an estimate's range: below low_usd, inside [low_usd, high_usd] (ends included), above high_usd. */
export type RangePosition = 'below' | 'inside' | 'above'

export type Finding =
  | { kind: 'price_vs_country'; zone_ppm2: number; country_ppm2: number; pct: number; points: number }
  | { kind: 'momentum'; pct: number; ppm2_now: number | null; ppm2_then: number | null; points: number }
  | { kind: 'days_on_market'; zone_days: number; country_days: number; points: number }
  | { kind: 'gross_yield'; pct: number; rent_ppm2: number; sale_ppm2: number; n_rent: number; points: number }
  | { kind: 'budget'; budget_usd: number; price_usd: number; segment: Segment; pct: number; points: number }
  | {
      kind: 'asking_price'
      asking_usd: number
      /** Asking price per m² when the area was given; compared with the segment's median per m². */
      asking_ppm2: number | null
      market_usd: number
      basis: 'ppm2' | 'price'
      segment: Segment
      /** Asking price relative to the market figure, in percent (+12.5 = 12.5% above). */
      pct: number
    }
  /** The asking price against the estimate of the property (broker); `pct` relative to the estimate's price. */
  | { kind: 'asking_vs_estimate'; asking_usd: number; estimate_usd: number; low_usd: number; high_usd: number; position: RangePosition; pct: number }
  /** The budget against the estimate of the home described (homebuyer). */
  | { kind: 'budget_vs_estimate'; budget_usd: number; estimate_usd: number; low_usd: number; high_usd: number; position: RangePosition; points: number }
  /** The input described a property, but fewer than `min_comparables` public listings compare with it: the zone rule decides. */
  | { kind: 'no_estimate'; operation: Operation; property_type: PropertyType; candidates: number; min_comparables: number }
  | { kind: 'land_share'; land_ppm2: number; built_ppm2: number; pct: number; points: number }
  | { kind: 'lot_size'; lot_m2: number; comfortable_m2: number; points: number }
  | { kind: 'horizon'; years: number; momentum_weight: number }
  /** Context, not scored: the listings of the segment the reader asked about. */
  | { kind: 'segment'; segment: Segment; n_active: number; median_ppm2_usd: number | null; median_price_usd: number | null }
  | { kind: 'missing'; figure: MissingFigure }

/** The findings about an estimate, whose words are in estimate-words.ts. */
export type EstimateFinding = Extract<Finding, { kind: 'asking_vs_estimate' | 'budget_vs_estimate' | 'no_estimate' }>
/** The findings about the zone, whose words are in words.ts. */
export type ZoneFinding = Exclude<Finding, EstimateFinding>
export const isEstimateFinding = (f: Finding): f is EstimateFinding =>
  f.kind === 'asking_vs_estimate' || f.kind === 'budget_vs_estimate' || f.kind === 'no_estimate'

export type Assessment = {
  verdict: string
  confidence: Confidence
  findings: Finding[]
  /** Listings behind the main figure, which drives the confidence. */
  sample: number
}

export const clamp = (value: number, low: number, high: number) => Math.min(high, Math.max(low, value))
const pctDiff = (value: number, reference: number) => (value / reference - 1) * 100

/**
 * Confidence from the sample behind the verdict (≥30 high, ≥10 medium, else low), one level lower
 * for each key figure that was missing. More listings never lower it; a missing figure never raises it.
 */
export function confidenceFor(sample: number, missing: number): Confidence {
  const base = sample >= 30 ? 2 : sample >= 10 ? 1 : 0
  return CONFIDENCE_LEVELS[Math.max(0, base - missing)]!
}

/** `confidence` one level lower per missing key figure, never below low. */
export const confidenceLowered = (confidence: Confidence, missing: number): Confidence =>
  CONFIDENCE_LEVELS[Math.max(0, CONFIDENCE_LEVELS.indexOf(confidence) - missing)]!

export const missingCount = (findings: readonly Finding[]) => findings.filter((f) => f.kind === 'missing').length

export const scoreOf = (findings: readonly Finding[]) =>
  findings.reduce((sum, f) => sum + ('points' in f ? f.points : 0), 0)

/** Verdicts and the score each needs, most favourable first. */
export type Ladder<V extends string> = readonly (readonly [V, number])[]

/** Highest tier whose threshold the score reaches: thresholds in the order of `verdicts`, last is the floor. */
export function verdictForScore<V extends string>(score: number, ladder: Ladder<V>, floor: V): V {
  for (const [verdict, threshold] of ladder) if (score >= threshold) return verdict
  return floor
}

/**
 * The assessment of a persona that scores its findings: the verdict the score reaches on `ladder`
 * (else `floor`), as confident as the zone's sale sample and the figures found allow.
 */
export function scoredAssessment<V extends string>(findings: Finding[], zone: ZoneDetail, ladder: Ladder<V>, floor: V): Assessment & { verdict: V } {
  const sample = saleSample(zone)
  return { verdict: verdictForScore(scoreOf(findings), ladder, floor), confidence: confidenceFor(sample, missingCount(findings)), findings, sample }
}

export const operationStats = (zone: ZoneDetail, operation: 'Venta' | 'Renta'): SegmentStats | undefined =>
  zone.by_operation.find((o) => o.operation === operation)

export const propertyTypeStats = (zone: ZoneDetail, type: string): SegmentStats | undefined =>
  zone.by_property_type.find((p) => p.property_type === type)

export const bedroomsStats = (zone: ZoneDetail, bucket: string): SegmentStats | undefined =>
  zone.by_bedrooms.find((b) => b.bedrooms === bucket)

/** The segment the reader asked about, as context: its listings and medians (none when it has no listings). */
export const segmentFinding = (segment: Segment, stats: SegmentStats | undefined): Finding => ({
  kind: 'segment',
  segment,
  n_active: stats?.n_active ?? 0,
  median_ppm2_usd: stats?.median_ppm2_usd ?? null,
  median_price_usd: stats?.median_price_usd ?? null,
})

/** Listings behind the zone's sale medians (Venta), the sample most verdicts rest on. */
export const saleSample = (zone: ZoneDetail) => operationStats(zone, 'Venta')?.n_active ?? zone.n_active

/** Zone vs country median sale price per m²: cheaper scores up to +range, dearer down to -range. */
export function priceVsCountry({ zone, country }: ZoneFacts, pointsPer10Pct: number, range: number): Finding {
  if (zone.median_ppm2_usd === null || country.median_ppm2_usd === null) return { kind: 'missing', figure: 'price_vs_country' }
  const pct = pctDiff(zone.median_ppm2_usd, country.median_ppm2_usd)
  return {
    kind: 'price_vs_country',
    zone_ppm2: zone.median_ppm2_usd,
    country_ppm2: country.median_ppm2_usd,
    pct,
    points: clamp((pct / 10) * pointsPer10Pct, -range, range),
  }
}

/** 30-day change of the zone's median price per m²; `pointsPerPct` may be negative (buyers dislike rises). */
export function momentum({ zone }: ZoneFacts, pointsPerPct: number, range: number): Finding {
  const change = zone.change_30d
  if (change.pct === null) return { kind: 'missing', figure: 'momentum' }
  return {
    kind: 'momentum',
    pct: change.pct,
    ppm2_now: change.median_ppm2_usd_now,
    ppm2_then: change.median_ppm2_usd_then,
    points: clamp(change.pct * pointsPerPct, -range, range),
  }
}

/**
 * Zone vs country median days on market, as a relative gap (+0.5 = the zone sells 50% faster).
 * `pointsPerGap` > 0 rewards fast markets (sellers, developers), < 0 slow ones (buyers' leverage).
 */
export function daysOnMarket({ zone, country }: ZoneFacts, pointsPerGap: number, range: number): Finding {
  if (zone.median_dom === null || country.median_dom === null || country.median_dom <= 0) {
    return { kind: 'missing', figure: 'days_on_market' }
  }
  const gap = (country.median_dom - zone.median_dom) / country.median_dom
  return {
    kind: 'days_on_market',
    zone_days: zone.median_dom,
    country_days: country.median_dom,
    points: clamp(gap * pointsPerGap, -range, range),
  }
}

/** Gross yield: twelve months of the median rent per m² over the median sale price per m², in percent. */
export function grossYield(zone: ZoneDetail): { pct: number; rent_ppm2: number; sale_ppm2: number; n_rent: number } | null {
  const rent = operationStats(zone, 'Renta')
  const sale = operationStats(zone, 'Venta')
  const salePpm2 = sale?.median_ppm2_usd ?? zone.median_ppm2_usd
  if (!rent || rent.median_ppm2_usd === null || salePpm2 === null || salePpm2 <= 0) return null
  return { pct: ((rent.median_ppm2_usd * 12) / salePpm2) * 100, rent_ppm2: rent.median_ppm2_usd, sale_ppm2: salePpm2, n_rent: rent.n_active }
}

/** Budget as a share of a segment's median price: below the median costs points, above it earns up to `upside`. */
export function budgetFit(
  budget: number,
  segment: Segment,
  stats: SegmentStats | undefined,
  pointsPerShare: number,
  range: number,
  upside: number,
): Finding {
  if (!stats || stats.median_price_usd === null || stats.median_price_usd <= 0) return { kind: 'missing', figure: 'budget_segment' }
  const share = budget / stats.median_price_usd
  return {
    kind: 'budget',
    budget_usd: budget,
    price_usd: stats.median_price_usd,
    segment,
    pct: share * 100,
    points: clamp((share - 1) * pointsPerShare, -range, upside),
  }
}

/** Where `amount` stands against the estimate's range, ends included. */
export const positionIn = (amount: number, estimate: EstimateFigures): RangePosition =>
  amount < estimate.low_usd ? 'below' : amount > estimate.high_usd ? 'above' : 'inside'

/**
 * The estimate the persona's input asked for: its figures when there is one, else the finding that
 * says there is none (too few comparables) and the zone rule decides; null when the input described no property.
 */
export function estimateIn({ estimate }: ZoneFacts): { figures: EstimateFigures } | { none: Finding } | null {
  if (!estimate) return null
  if (estimate.estimate) return { figures: estimate.estimate }
  const { operation, property_type } = estimate.subject
  return { none: { kind: 'no_estimate', operation, property_type, candidates: estimate.method.candidates, min_comparables: estimate.method.min_comparables } }
}
