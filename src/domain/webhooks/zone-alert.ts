import { type Static, Type } from '@sinclair/typebox'
import { fail } from '../../shared/errors.ts'
import type { Decider } from '../decider.ts'
import { decimalOf } from '../market/decimal.ts'
import { cents } from '../market/rounding.ts'
import { type Country, Country as CountrySchema } from '../market/vocabulary.ts'
import { changePct } from '../market/zone-statistics.ts'
import { zoneName, zoneSlug } from '../market/zone-name.ts'
import { At } from '../schemas.ts'

/**
 * The zone alert rule of `zone.statistics_changed` webhooks (issue 31; docs/decisions/
 * 0113-zone-alert-threshold.md), pure: after a change of the market, is a zone's published median
 * price per m² far enough from the last value sent to a subscriber to send it again?
 *
 * - The figure is the zone's published `median_ppm2_usd` (GET /zones, /zone/{slug}), computed by
 *   src/domain/market/zone-statistics.ts alone, taken here in whole cents (`cents` of rounding.ts);
 *   null when the zone publishes none (too few sale listings).
 * - The threshold is a whole number of basis points (1 bp = 0.01 %; 500 is 5 %), 1 to 100,000
 *   (0.01 % to 1,000 %). A subscriber writes it in percent with at most 2 decimals
 *   (`thresholdOfPercent`): no binary fraction sits between what it wrote and what is compared.
 * - An alert is sent when the published value moved from the last one SENT to this subscriber for
 *   this zone (not from the market's previous value) by at least the threshold:
 *   `10,000 × |now − sent| ≥ bp × sent` and `now ≠ sent`, in integers (BigInt); the value sent
 *   becomes the new reference. A slow drift therefore alerts once it has added up to the threshold,
 *   and an oscillation inside the threshold never alerts. From a sent 0, any other value alerts.
 * - The first publishable value of a zone for a subscription is sent as its first alert (with no
 *   previous value): a subscriber can only judge a move against a value it was given.
 * - A null (the zone stops publishing a median) sends nothing and keeps the value last sent; when a
 *   value comes back it is compared with that value like any other. Flapping around the publication
 *   minimum therefore sends nothing by itself.
 *
 * One stream per subscription (`zoneAlertStream`), its state the value last sent per zone; the
 * subscription itself (zones covered, threshold as it stands now) comes in with the command.
 */

/** The smallest and the largest threshold, in basis points: 0.01 % and 1,000 %. */
export const MIN_THRESHOLD_BP = 1
export const MAX_THRESHOLD_BP = 100_000
const BP_PER_UNIT = 10_000n

/** A subscription to `zone.statistics_changed` as the rule sees it. */
export type ZoneAlertSubscription = {
  id: string
  country: Country
  /** The zone's number, or null: every zone of the country. */
  zone: number | null
  /** Basis points (500 = 5 %), from `thresholdOfPercent`. */
  thresholdBp: number
}

/** A zone's figure after a change of the market, for one subscription. */
export type NoteZoneFigure = {
  type: 'NoteZoneFigure'
  subscription: ZoneAlertSubscription
  country: Country
  zone: number
  /** The zone's published median price per m² in whole USD cents now; null when it publishes none. */
  medianPpm2Cents: number | null
  /** When the change was seen (ISO 8601, UTC), from the shell's clock. */
  at: string
  /** The log position of the change that moved the figure: a worker that restarts finds the alert it already decided for it. */
  position?: number
}

const Usd = Type.Number({ description: 'USD per m², 2 decimals: the published median_ppm2_usd' })

export const ZoneAlertEventSchemas = {
  /** The zone's figure was sent to the subscriber: from now on alerts are measured from it. */
  ZoneAlertSent: Type.Object({
    subscription_id: Type.String(),
    country: CountrySchema,
    zone: Type.String(),
    slug: Type.String(),
    median_ppm2_usd: Usd,
    /** The value sent before this one; null for the zone's first alert. */
    previous_median_ppm2_usd: Type.Union([Usd, Type.Null()]),
    /** The move from the previous value in percent, 2 decimals (as `change_30d_pct`); null for the first alert or from 0. */
    change_pct: Type.Union([Type.Number(), Type.Null()]),
    /** The threshold it reached, in percent. */
    threshold_pct: Type.Number(),
    at: At,
    /** The log position of the change after which the figure was read (the webhook's id is derived from it). */
    position: Type.Optional(Type.Integer({ minimum: 0 })),
  }),
}
type Schemas = typeof ZoneAlertEventSchemas
export type ZoneAlertEvent = { [K in keyof Schemas]: { type: K; data: Static<Schemas[K]> } }[keyof Schemas]

/** A subscription's stream folded: the value last sent per zone, in cents, by `zoneKey`. */
export type ZoneAlerts = { lastSentCents: Readonly<Record<string, number>> }
export const initialZoneAlerts: ZoneAlerts = { lastSentCents: {} }

export const zoneAlertStream = (subscriptionId: string) => `zonealerts-${subscriptionId}`
/** How the state names a zone: `GT/zona-7`. */
const keyOf = (country: Country, slug: string) => `${country}/${slug}`
export const zoneKey = (country: Country, zoneNumber: number) => keyOf(country, zoneSlug(zoneNumber))

/**
 * The threshold a subscriber wrote in percent (5, 2.5, 0.25) in basis points, exactly: at most 2
 * decimals, from 0.01 % to 1,000 %; anything else is `invalid_request`.
 */
export function thresholdOfPercent(percent: number): number {
  if (typeof percent !== 'number' || !Number.isFinite(percent)) throw fail.invalidRequest('the threshold must be a number of percent, e.g. 5 or 2.5')
  const { digits, scale } = decimalOf(percent)
  if (scale > 2) throw fail.invalidRequest(`the threshold ${percent} % has more than 2 decimals`)
  const bp = digits * 10n ** BigInt(2 - scale)
  if (bp < BigInt(MIN_THRESHOLD_BP) || bp > BigInt(MAX_THRESHOLD_BP)) {
    throw fail.invalidRequest(`the threshold must be from 0.01 % to 1000 %, not ${percent} %`)
  }
  return Number(bp)
}

/** Basis points in percent (500 → 5), for the event and the payload. */
export const percentOfThreshold = (bp: number): number => bp / 100

/**
 * The rule, once: has `now` moved from `sent` (whole cents, ≥ 0) by at least `bp` basis points of
 * `sent`? Exact: 10,000 × |now − sent| ≥ bp × sent, and a value equal to the one sent never moved.
 */
export function movedByThreshold(bp: number, sent: number, now: number): boolean {
  if (now === sent) return false
  const [n, s] = [BigInt(now), BigInt(sent)]
  return (n > s ? n - s : s - n) * BP_PER_UNIT >= BigInt(bp) * s
}

/** Whether `subscription` is about this zone: its country, and its zone or every zone. */
export const covers = (subscription: ZoneAlertSubscription, country: Country, zoneNumber: number): boolean =>
  subscription.country === country && (subscription.zone === null || subscription.zone === zoneNumber)

/** A figure or threshold no caller should hand over (the shell's mistake, not a subscriber's). */
function checkCommand(command: NoteZoneFigure): void {
  const { thresholdBp } = command.subscription
  if (!Number.isSafeInteger(thresholdBp) || thresholdBp < MIN_THRESHOLD_BP || thresholdBp > MAX_THRESHOLD_BP) {
    throw new Error(`threshold of subscription ${command.subscription.id} is ${thresholdBp} bp, not a whole number from 1 to 100000`)
  }
  const figure = command.medianPpm2Cents
  if (figure !== null && (!Number.isSafeInteger(figure) || figure < 0)) throw new Error(`zone figure ${figure} is not whole cents ≥ 0`)
}

/** Send the zone's figure when it is the first publishable one or has moved by the threshold since the last sent; else nothing. */
export function decideZoneAlert(command: NoteZoneFigure, state: ZoneAlerts): ZoneAlertEvent[] {
  checkCommand(command)
  const { subscription, country, zone, medianPpm2Cents: now } = command
  if (now === null || !covers(subscription, country, zone)) return []
  const sent = state.lastSentCents[zoneKey(country, zone)]
  if (sent !== undefined && !movedByThreshold(subscription.thresholdBp, sent, now)) return []
  const [nowUsd, sentUsd] = [now / 100, sent === undefined ? null : sent / 100]
  return [
    {
      type: 'ZoneAlertSent',
      data: {
        subscription_id: subscription.id,
        country,
        zone: zoneName(zone),
        slug: zoneSlug(zone),
        median_ppm2_usd: nowUsd,
        previous_median_ppm2_usd: sentUsd,
        change_pct: changePct(nowUsd, sentUsd),
        threshold_pct: percentOfThreshold(subscription.thresholdBp),
        at: command.at,
        ...(command.position === undefined ? {} : { position: command.position }),
      },
    },
  ]
}

export function evolveZoneAlerts(state: ZoneAlerts, event: ZoneAlertEvent): ZoneAlerts {
  switch (event.type) {
    case 'ZoneAlertSent':
      return { lastSentCents: { ...state.lastSentCents, [keyOf(event.data.country, event.data.slug)]: cents(event.data.median_ppm2_usd) } }
    default: {
      const never: never = event.type
      throw new Error(`unknown event ${JSON.stringify(never)}`)
    }
  }
}

export const isZoneAlertEvent = (event: { type: string }): event is ZoneAlertEvent => Object.hasOwn(ZoneAlertEventSchemas, event.type)

/** A subscription's zone alerts: which figure of which zone to send, and from which value the next is measured. */
export const zoneAlertDecider: Decider<NoteZoneFigure, ZoneAlertEvent, ZoneAlerts> = {
  decide: decideZoneAlert,
  evolve: evolveZoneAlerts,
  initialState: initialZoneAlerts,
  is: isZoneAlertEvent,
}
