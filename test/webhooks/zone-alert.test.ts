import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import type { Country } from '../../src/domain/market/vocabulary.ts'
import {
  type NoteZoneFigure,
  type ZoneAlertEvent,
  type ZoneAlertSubscription,
  type ZoneAlerts,
  MAX_THRESHOLD_BP,
  thresholdOfPercent,
  zoneAlertDecider,
  zoneAlertStream,
  zoneKey,
} from '../../src/domain/webhooks/zone-alert.ts'
import { specify } from '../support/given-when-then.ts'

const at = '2026-11-27T10:00:00.000Z'
const alerts = specify(zoneAlertDecider)

/** GT Zona 7 at 5 %. */
const zona7: ZoneAlertSubscription = { id: 'sub_1', country: 'GT', zone: 7, thresholdBp: 500 }
const figure = (cents: number | null, over: Partial<NoteZoneFigure> = {}): NoteZoneFigure => ({
  type: 'NoteZoneFigure',
  subscription: zona7,
  country: 'GT',
  zone: 7,
  medianPpm2Cents: cents,
  at,
  ...over,
})
/** The event sending `usd` after `previous` (null: the first), with its change in percent. */
const sent = (usd: number, previous: number | null, change: number | null, over: Partial<ZoneAlertEvent['data']> = {}): ZoneAlertEvent => ({
  type: 'ZoneAlertSent',
  data: {
    subscription_id: 'sub_1',
    country: 'GT',
    zone: 'Zona 7',
    slug: 'zona-7',
    median_ppm2_usd: usd,
    previous_median_ppm2_usd: previous,
    change_pct: change,
    threshold_pct: 5,
    at,
    ...over,
  },
})

describe('zone alerts: given/when/then', () => {
  test('the first publishable value of a zone is sent, with no previous value; none published yet sends nothing', () => {
    alerts.given().when(figure(123_456)).then([sent(1234.56, null, null)])
    alerts.given().when(figure(null)).thenNothing()
  })

  test('the threshold is reached at exactly 5 % of the value sent, up or down, and not one cent before', () => {
    const from1000 = alerts.given([sent(1000, null, null)])
    from1000.when(figure(105_000)).then([sent(1050, 1000, 5)])
    from1000.when(figure(104_999)).thenNothing()
    from1000.when(figure(95_000)).then([sent(950, 1000, -5)])
    from1000.when(figure(95_001)).thenNothing()
    from1000.when(figure(100_000)).thenNothing()
  })

  test('the move is measured from the last value sent, not from the market before: a drift of 3 % then 2 % alerts', () => {
    // 1000 sent; the market went to 1030 (nothing sent); 1050 is 5 % from what the subscriber holds.
    const history = [sent(1000, null, null)]
    alerts.given(history).when(figure(103_000)).thenNothing()
    alerts.given(history).when(figure(105_000)).then([sent(1050, 1000, 5)])
    // After an alert at 1050, 1000 is only 4.76 % below it.
    alerts.given([...history, sent(1050, 1000, 5)]).when(figure(100_000)).thenNothing()
  })

  test('a value sent becomes the reference: the state holds it in cents per zone', () => {
    alerts.given([sent(1000, null, null)]).when(figure(110_001)).thenState({ lastSentCents: { 'GT/zona-7': 110_001 } })
  })

  test('a zone that stops publishing sends nothing and keeps the value sent; when a value comes back it is compared with that one', () => {
    const history = [sent(1000, null, null)]
    alerts.given(history).when(figure(null)).thenNothing()
    alerts.given(history).when(figure(null)).thenState({ lastSentCents: { 'GT/zona-7': 100_000 } })
    alerts.given(history).when(figure(102_000)).thenNothing()
    alerts.given(history).when(figure(90_000)).then([sent(900, 1000, -10)])
  })

  test('from a value of 0 sent, any other value is sent (its change in percent is null); 0 again is nothing', () => {
    const history = [sent(0, null, null)]
    alerts.given(history).when(figure(1)).then([sent(0.01, 0, null)])
    alerts.given(history).when(figure(0)).thenNothing()
  })

  test('the threshold is the subscription’s as it stands now: lowered to 1 %, a move of 2 % alerts', () => {
    const onePercent = { ...zona7, thresholdBp: 100 }
    alerts.given([sent(1000, null, null)]).when(figure(102_000, { subscription: onePercent })).then([sent(1020, 1000, 2, { threshold_pct: 1 })])
  })

  test('a country-wide subscription keeps one reference per zone; zones it does not cover send nothing', () => {
    const gt: ZoneAlertSubscription = { id: 'sub_gt', country: 'GT', zone: null, thresholdBp: 250 }
    const zona3 = sent(500, null, null, { subscription_id: 'sub_gt', zone: 'Zona 3', slug: 'zona-3', threshold_pct: 2.5 })
    alerts.given([zona3]).when(figure(100_000, { subscription: gt })).then([sent(1000, null, null, { subscription_id: 'sub_gt', threshold_pct: 2.5 })])
    alerts.given([zona3]).when(figure(51_250, { subscription: gt, zone: 3 })).then([sent(512.5, 500, 2.5, { subscription_id: 'sub_gt', zone: 'Zona 3', slug: 'zona-3', threshold_pct: 2.5 })])
    alerts.given([zona3]).when(figure(51_249, { subscription: gt, zone: 3 })).thenNothing()
    alerts.given().when(figure(100_000, { subscription: gt, country: 'SV' })).thenNothing()
    alerts.given().when(figure(100_000, { zone: 8 })).thenNothing()
  })

  test('a malformed figure or threshold is the caller’s mistake and throws', () => {
    for (const cents of [-1, 1.5, Number.NaN, 2 ** 53]) expect(() => zoneAlertDecider.decide(figure(cents), zoneAlertDecider.initialState), String(cents)).toThrow(/whole cents/)
    for (const thresholdBp of [0, 2.5, MAX_THRESHOLD_BP + 1]) {
      expect(() => zoneAlertDecider.decide(figure(1, { subscription: { ...zona7, thresholdBp } }), zoneAlertDecider.initialState)).toThrow(/threshold/)
    }
  })

  test('its events are told among others; one stream per subscription', () => {
    expect(zoneAlertDecider.is({ type: 'ZoneAlertSent' })).toBe(true)
    expect(zoneAlertDecider.is({ type: 'ApiKeyIssued' })).toBe(false)
    expect(zoneAlertStream('sub_1')).toBe('zonealerts-sub_1')
  })
})

describe('the threshold a subscriber writes, in percent', () => {
  test('becomes whole basis points exactly: at most 2 decimals, from 0.01 % to 1000 %', () => {
    expect([5, 2.5, 0.25, 0.01, 12.34, 1000, 33.33].map(thresholdOfPercent)).toEqual([500, 250, 25, 1, 1234, 100_000, 3333])
  })

  test.each([0, -5, 0.001, 2.505, 1000.01, 1e21, Number.NaN, Number.POSITIVE_INFINITY])('%s is invalid_request', (percent) => {
    expect(() => thresholdOfPercent(percent)).toThrow(expect.objectContaining({ code: 'invalid_request' }))
  })
})

// ---- Properties over generated price moves -------------------------------------------------------

type Alert = { index: number; previous: number | null; value: number }

/** The decider over a zone's figures, one after another, folding what it decides: the alerts, by the index of the figure. */
function decided(subscription: ZoneAlertSubscription, values: readonly (number | null)[], country: Country = 'GT', zone = 7): Alert[] {
  let state: ZoneAlerts = zoneAlertDecider.initialState
  const found: Alert[] = []
  values.forEach((value, index) => {
    const events = zoneAlertDecider.decide({ type: 'NoteZoneFigure', subscription, country, zone, medianPpm2Cents: value, at }, state)
    for (const event of events) {
      const d = event.data
      found.push({ index, previous: d.previous_median_ppm2_usd === null ? null : Math.round(d.previous_median_ppm2_usd * 100), value: Math.round(d.median_ppm2_usd * 100) })
    }
    state = events.reduce(zoneAlertDecider.evolve, state)
  })
  return found
}

const ceilDiv = (a: bigint, b: bigint) => (a + b - 1n) / b
const floorDiv = (a: bigint, b: bigint) => (a >= 0n ? a / b : -ceilDiv(-a, b))

/**
 * The reference, written apart from the module: from a value `sent` (cents), the values that do not
 * alert form the band strictly between `down`, the largest whole cent at or under sent·(1 − t), and
 * `up`, the smallest at or above sent·(1 + t), t = bp / 10,000 (`sent` itself included, whatever t).
 */
function band(bp: number, sent: number): { down: number; up: number } {
  const [s, t] = [BigInt(sent), BigInt(bp)]
  return { down: Number(floorDiv(s * (10_000n - t), 10_000n)), up: Number(ceilDiv(s * (10_000n + t), 10_000n)) }
}
const alertsFrom = (bp: number, sent: number, value: number) => {
  const { down, up } = band(bp, sent)
  return value !== sent && (value >= up || value <= down)
}

/** What the reference sends: the first value, then each value outside the band of the last one sent; a null passes by. */
function reference(bp: number, values: readonly (number | null)[]): Alert[] {
  let sent: number | null = null
  const found: Alert[] = []
  values.forEach((value, index) => {
    if (value === null || (sent !== null && !alertsFrom(bp, sent, value))) return
    found.push({ index, previous: sent, value })
    sent = value
  })
  return found
}

const thresholds = fc.oneof(fc.constantFrom(1, 100, 250, 500, 1000, 10_000, 20_000), fc.integer({ min: 1, max: MAX_THRESHOLD_BP }))
const start = fc.oneof(fc.integer({ min: 0, max: 100 }), fc.integer({ min: 1, max: 2_000_000_000 }))
/** A move of the market: by basis points of the value before, to an edge of the band of the value last sent (± a cent), or no figure. */
type Move = number | null | { edge: 'up' | 'down'; by: -1 | 0 | 1 }
const move = fc.oneof(
  fc.integer({ min: -3000, max: 3000 }),
  fc.constant(0),
  fc.record({ edge: fc.constantFrom('up' as const, 'down' as const), by: fc.constantFrom(-1 as const, 0 as const, 1 as const) }),
  fc.constant(null),
)

/** The figures a walk of `moves` from `first` gives, the band's edges found by the reference. */
function walkOf(bp: number, first: number, moves: readonly Move[]): (number | null)[] {
  const values: (number | null)[] = [first]
  let [current, sent] = [first, first]
  for (const step of moves) {
    if (step === null) {
      values.push(null)
      continue
    }
    if (typeof step === 'number') current = Math.max(0, Math.round((current * (10_000 + step)) / 10_000))
    else current = Math.max(0, band(bp, sent)[step.edge] + step.by)
    values.push(current)
    if (alertsFrom(bp, sent, current)) sent = current
  }
  return values
}
const walks = fc.tuple(thresholds, start, fc.array(move, { maxLength: 60 })).map(([bp, first, moves]) => ({ bp, values: walkOf(bp, first, moves) }))
const subscriptionWith = (thresholdBp: number): ZoneAlertSubscription => ({ ...zona7, thresholdBp })

describe('zone alerts: properties', () => {
  test('on every generated walk the decider sends exactly what the reference sends', () => {
    fc.assert(
      fc.property(walks, ({ bp, values }) => {
        expect(decided(subscriptionWith(bp), values)).toEqual(reference(bp, values))
      }),
      { numRuns: 500 },
    )
  })

  test('an oscillation inside the threshold sends the first value only', () => {
    const inside = fc
      .tuple(thresholds, fc.integer({ min: 1, max: 2_000_000_000 }))
      .chain(([bp, sent]) => {
        // Strictly inside: |v − sent| × 10,000 < bp × sent.
        const reach = Math.floor((bp * sent - 1) / 10_000)
        return fc.tuple(fc.constant(bp), fc.constant(sent), fc.array(fc.integer({ min: Math.max(0, sent - reach), max: sent + reach }), { minLength: 1, maxLength: 40 }))
      })
      .filter(([bp, sent, values]) => values.every((v) => BigInt(Math.abs(v - sent)) * 10_000n < BigInt(bp) * BigInt(sent)))
    fc.assert(
      fc.property(inside, ([bp, sent, values]) => {
        expect(decided(subscriptionWith(bp), [sent, ...values])).toEqual([{ index: 0, previous: null, value: sent }])
      }),
    )
  })

  test('a monotone drift alerts each time the move accumulated since the last alert reaches the threshold, and only then', () => {
    const drift = fc.tuple(thresholds, fc.integer({ min: 1, max: 10_000_000 }), fc.array(fc.integer({ min: 0, max: 400 }), { minLength: 1, maxLength: 80 }), fc.boolean())
    fc.assert(
      fc.property(drift, ([bp, first, stepsBp, down]) => {
        const values = [first]
        for (const step of stepsBp) values.push(Math.max(0, Math.round((values.at(-1)! * (10_000 + (down ? -step : step))) / 10_000)))
        const found = decided(subscriptionWith(bp), values)
        const at = new Map(found.map((alert) => [alert.index, alert]))
        let last = first
        values.forEach((value, index) => {
          const reached = BigInt(Math.abs(value - last)) * 10_000n >= BigInt(bp) * BigInt(last) && value !== last
          if (index === 0) expect(at.get(0)).toEqual({ index: 0, previous: null, value: first })
          else expect(at.has(index), `value ${value} after ${last} sent, ${bp} bp`).toBe(reached)
          if (at.has(index)) last = value
        })
        // Drifting one way, every alert goes further that way.
        const sentValues = found.map((alert) => alert.value)
        expect(sentValues).toEqual([...sentValues].sort((a, b) => (down ? b - a : a - b)))
      }),
    )
  })

  test('nulls between the figures change nothing: the same values are sent as without them', () => {
    fc.assert(
      fc.property(walks, ({ bp, values }) => {
        const withNulls = decided(subscriptionWith(bp), values).map(({ previous, value }) => ({ previous, value }))
        const without = decided(subscriptionWith(bp), values.filter((v) => v !== null)).map(({ previous, value }) => ({ previous, value }))
        expect(withNulls).toEqual(without)
      }),
    )
  })

  test('a country-wide subscription judges each zone on its own, as if it were that zone’s only subscription', () => {
    const moves = fc.array(fc.tuple(fc.constantFrom(1, 2, 3), fc.option(fc.integer({ min: 0, max: 200_000 }), { nil: null })), { maxLength: 60 })
    fc.assert(
      fc.property(thresholds, moves, (bp, figures) => {
        const subscription: ZoneAlertSubscription = { id: 'sub_gt', country: 'GT', zone: null, thresholdBp: bp }
        let state: ZoneAlerts = zoneAlertDecider.initialState
        const byZone = new Map<number, number[]>()
        for (const [zone, cents] of figures) {
          const events = zoneAlertDecider.decide({ type: 'NoteZoneFigure', subscription, country: 'GT', zone, medianPpm2Cents: cents, at }, state)
          for (const event of events) byZone.set(zone, [...(byZone.get(zone) ?? []), Math.round(event.data.median_ppm2_usd * 100)])
          state = events.reduce(zoneAlertDecider.evolve, state)
        }
        for (const zone of [1, 2, 3]) {
          const own = figures.filter(([z]) => z === zone).map(([, cents]) => cents)
          expect(byZone.get(zone) ?? [], `Zona ${zone}`).toEqual(reference(bp, own).map((alert) => alert.value))
          const lastSent = byZone.get(zone)?.at(-1)
          expect(state.lastSentCents[zoneKey('GT', zone)]).toBe(lastSent)
        }
      }),
    )
  })
})
