import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'vitest'
import type { FeedRecord } from '../../src/domain/listings/feed.ts'
import { DEFAULT_FX } from '../../src/domain/market/fx.ts'
import { webhooksStream } from '../../src/domain/webhooks/subscription.ts'
import { ingestRecords } from '../../src/listings/ingest.ts'
import { listingId } from '../../src/domain/listings/listing.ts'
import { webhookWorkerOn } from '../../src/services.ts'
import { cryptoRandom } from '../../src/shared/random.ts'
import type { DeliveryWorker } from '../../src/webhooks/worker.ts'
import { LOCAL_DELIVERY, startTestSystem, TEST_SIGNING_KEY, type TestSystem } from '../support/app.ts'
import { databaseTargets } from '../support/databases.ts'
import { eventually } from '../support/eventually.ts'
import { aRecord } from '../support/market.ts'
import { TestReceiver } from '../support/webhook-receiver.ts'

/**
 * The delivery worker (src/webhooks/worker.ts) in process, on each store, against a local receiver
 * that verifies every signature with the `standardwebhooks` package. Time is a clock the specs move:
 * back-off and the 24-hour limit are checked without waiting. Each spec subscribes its own webhook on
 * its own country's listings, so specs stand alone on one store. The same failures with real processes
 * (SIGKILL, a stopped PostgreSQL, two servers): test/webhooks/outages.test.ts.
 */

type Json = Record<string, any>
const HOUR = 3600_000
const idOf = (sourceId: string) => listingId('broker', sourceId)

for (const target of databaseTargets('webhook deliveries')) {
  describe(`webhook deliveries on ${target.name}`, () => {
    let system: TestSystem
    let key: string
    /** The workers' clock: real time at the start of each spec (receivers check signatures' timestamps), moved by the specs. */
    let now = Date.now()
    const clock = () => new Date(now)
    const workers: DeliveryWorker[] = []
    const receivers: TestReceiver[] = []

    const worker = () => {
      const made = webhookWorkerOn(system.storage, system.zones, TEST_SIGNING_KEY, LOCAL_DELIVERY, clock, cryptoRandom, undefined, (error) => {
        throw error
      })
      workers.push(made)
      return made
    }
    const receiver = async () => {
      let secret = ''
      const made = await new TestReceiver(() => secret).start()
      receivers.push(made)
      return { receiver: made, setSecret: (s: string) => (secret = s) }
    }
    /** Subscribes `body` (with the receiver's URL) and tells the receiver its secret. */
    const subscribe = async (at: Awaited<ReturnType<typeof receiver>>, body: Json) => {
      const response = await system.request('/api/v1/webhooks', { method: 'POST', key, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ url: at.receiver.url, ...body }) })
      const answer = (await response.json()) as Json
      expect(response.status, JSON.stringify(answer)).toBe(201)
      at.setSecret(answer.secret)
      await system.settle()
      return answer.webhook.id as string
    }
    const ingest = async (records: FeedRecord[]) => {
      await ingestRecords(system.storage.store, records, DEFAULT_FX)
      await system.settle()
    }
    /** Rounds of `worker` until it finds nothing to do. */
    const drain = async (w: DeliveryWorker) => {
      for (let i = 0; i < 1000 && (await w.round()); i++);
    }
    const listing = (country: string, id: string, overrides: Partial<FeedRecord> = {}) =>
      aRecord({ country: country as FeedRecord['country'], zone: 'Zona 1', currency: 'USD', source_id: id, price: 100_000, verified_at: '2026-05-01T00:00:00.000Z', observed_at: '2026-05-02T00:00:00.000Z', ...overrides })
    const changesAfter = async (country: string, cursor: string) =>
      ((await (await system.request(`/api/v1/listings/changes?country=${country}&after=${cursor}&limit=1000`, { key })).json()) as Json).changes as Json[]

    beforeAll(async () => {
      system = await startTestSystem(await target.open())
      key = (await system.ownerWithKey('acme', 'enterprise')).key
    })
    beforeEach(() => {
      now = Date.now()
    })
    afterEach(async () => {
      await Promise.all(workers.splice(0).map((w) => w.stop()))
      await Promise.all(receivers.splice(0).map((r) => r.stop()))
    })
    afterAll(() => system.close())

    test('the changes after subscribing are delivered in log order, each once, signed, as the change feed has them', async () => {
      await ingest([listing('CR', 'before-1')])
      const at = await receiver()
      const before = ((await (await system.request('/api/v1/listings/changes?country=CR&limit=1000', { key })).json()) as Json).next_cursor
      await subscribe(at, { events: ['listing.listed', 'listing.updated', 'listing.price_changed', 'listing.removed'], country: 'CR' })
      for (const record of [listing('CR', 'a'), listing('CR', 'b'), listing('CR', 'a', { price: 90_000, observed_at: '2026-05-03T00:00:00.000Z' }), listing('CR', 'b', { status: 'delisted', observed_at: '2026-05-04T00:00:00.000Z' })]) {
        await ingest([record])
      }
      await ingest([listing('HN', 'elsewhere')])
      await drain(worker())
      const feed = await changesAfter('CR', before)
      expect(feed.map((c) => c.kind)).toEqual(['listed', 'listed', 'price_changed', 'removed'])
      expect(at.receiver.requests.every((r) => r.verified)).toBe(true)
      expect(at.receiver.requests.map((r) => r.body.data)).toEqual(feed)
      expect(at.receiver.requests.map((r) => r.type)).toEqual(feed.map((c) => `listing.${c.kind}`))
      expect(new Set(at.receiver.requests.map((r) => r.id)).size).toBe(4)
    })

    test('only the kinds subscribed to are sent', async () => {
      const at = await receiver()
      await subscribe(at, { events: ['listing.price_changed'], country: 'SV' })
      await ingest([listing('SV', 'p'), listing('SV', 'p', { price: 95_000, observed_at: '2026-05-03T00:00:00.000Z' }), listing('SV', 'q')])
      await drain(worker())
      expect(at.receiver.requests.map((r) => [r.type, (r.body.data as Json).price])).toEqual([['listing.price_changed', { old_usd: 100_000, new_usd: 95_000 }]])
    })

    test('a failing message is retried with the same webhook-id after 5 s, 30 s, 2 min…, and nothing after it is sent before it', async () => {
      const at = await receiver()
      await subscribe(at, { events: ['listing.listed'], country: 'BZ' })
      await ingest([listing('BZ', 'first'), listing('BZ', 'second')])
      at.receiver.behave = (_, count) => ({ status: count <= 3 ? 503 : 204 })
      const w = worker()
      const started = now
      await drain(w)
      expect(at.receiver.requests).toHaveLength(1)
      for (const wait of [5_000, 30_000]) {
        now += wait - 1
        await drain(w)
        expect(at.receiver.requests.length, `not before ${wait} ms`).toBeLessThan(4)
        now += 1
        await drain(w)
      }
      expect(now - started).toBe(35_000)
      // The 4th attempt (after 5 s + 30 s + 2 min) is answered 204; then the second listing follows.
      now += 120_000
      await drain(w)
      const ids = at.receiver.requests.map((r) => r.id)
      expect(ids.slice(0, 4)).toEqual([ids[0], ids[0], ids[0], ids[0]])
      expect(ids).toHaveLength(5)
      expect(ids[4]).not.toBe(ids[0])
      expect(at.receiver.requests.map((r) => (r.body.data as Json).listing_id)).toEqual(['first', 'first', 'first', 'first', 'second'].map(idOf))
      const attempts = ((await (await system.request(`/api/v1/webhooks/${(await webhookIds())[0]}/deliveries`, { key })).json()) as Json).deliveries as Json[]
      expect(attempts.slice(0, 5).map((a) => [a.attempt, a.outcome, a.status])).toEqual([[1, 'delivered', 204], [4, 'delivered', 204], [3, 'rejected', 503], [2, 'rejected', 503], [1, 'rejected', 503]])
    })

    /** The ids of acme's webhooks, newest first. */
    const webhookIds = async () => (((await (await system.request('/api/v1/webhooks', { key })).json()) as Json).webhooks as Json[]).map((w) => w.id as string).reverse()

    test('after 24 hours of failures the webhook is disabled, by an event, shown in GET /webhooks, and nothing more is sent', async () => {
      const at = await receiver()
      const id = await subscribe(at, { events: ['listing.listed'], country: 'DO' })
      await ingest([listing('DO', 'never')])
      at.receiver.behave = () => ({ status: 500 })
      const w = worker()
      await drain(w)
      for (let hours = 0; hours < 25; hours++) {
        now += HOUR
        await drain(w)
      }
      const webhook = (((await (await system.request('/api/v1/webhooks', { key })).json()) as Json).webhooks as Json[]).find((x) => x.id === id)!
      expect(webhook.status).toBe('disabled')
      expect(webhook.disabled_reason).toMatch(/failed for 24 hours.*rejected 500/)
      const events = await system.storage.store.readStream(webhooksStream('acme'))
      expect(events.filter((e) => e.type === 'WebhookDisabled').map((e) => e.data.webhook_id)).toContain(id)
      const sent = at.receiver.requests.length
      // 5 s, 30 s, 2 min, 10 min, 30 min, 1 h, then every 2 h: the attempts of a day.
      expect(sent).toBeGreaterThanOrEqual(12)
      now += 10 * HOUR
      await drain(w)
      expect(at.receiver.requests.length).toBe(sent)
    })

    test('a process that dies holding a line loses it after the lease: another sends the same message, same webhook-id', async () => {
      const at = await receiver()
      await subscribe(at, { events: ['listing.listed'], country: 'PA' })
      await ingest([listing('PA', 'once')])
      at.receiver.behave = () => ({ status: 204, delayMs: 60_000 })
      const dying = worker()
      // It sends, and never hears back: as if killed mid-delivery (the round that sends is left hanging;
      // rounds before it may find other specs' lines with nothing for them).
      void (async () => {
        while ((await dying.round()) && at.receiver.requests.length === 0);
      })()
      await eventually('the first attempt reaches the receiver', () => at.receiver.requests.length === 1)
      at.receiver.behave = () => ({ status: 204 })
      const other = worker()
      await drain(other)
      expect(at.receiver.requests, 'nobody else sends while the lease holds').toHaveLength(1)
      now += 31_000
      await drain(other)
      expect(at.receiver.requests.map((r) => r.id)).toEqual([at.receiver.requests[0]!.id, at.receiver.requests[0]!.id])
    })

    test('a process that dies in the middle of several changes queued together: another sends the rest, from the one in flight, in order', async () => {
      const at = await receiver()
      await subscribe(at, { events: ['listing.listed'], country: 'BR' })
      const records = ['q1', 'q2', 'q3', 'q4'].map((id) => listing('BR', id))
      await ingest(records)
      // The second message never hears back: its sender is as if killed, the first delivered, the last two still queued.
      at.receiver.behave = (_, count) => ({ status: 204, delayMs: count === 2 ? 60_000 : 0 })
      const dying = worker()
      // Whatever it does once the spec is over (its store closed) is the dead process's, not the spec's.
      void (async () => {
        while ((await dying.round()) && at.receiver.requests.length < 2);
      })().catch(() => {})
      await eventually('the second message reaches the receiver', () => at.receiver.requests.length === 2)
      const delivery = async () => ((await (await system.request('/api/v1/webhooks', { key })).json()) as Json).webhooks.find((w: Json) => w.country === 'BR').delivery
      // The four changes were queued at once (decision 0112, amended): three messages wait, the one in flight first.
      expect((await delivery()).pending_messages).toBe(3)
      const other = worker()
      now += 31_000
      await drain(other)
      const [first, second, third, fourth] = at.receiver.distinct.map((r) => r.id)
      expect(at.receiver.requests.map((r) => r.id)).toEqual([first, second, second, third, fourth])
      expect(at.receiver.distinct.map((r) => (r.body.data as Json).listing_id)).toEqual(records.map((r) => idOf(r.source_id)))
      expect(await delivery()).toEqual({ pending_messages: 0, failing_since: null, next_attempt_at: null })
    })

    test('two workers delivering at once: every change once or more, in order, duplicates only under the same id', async () => {
      const at = await receiver()
      await subscribe(at, { events: ['listing.listed'], country: 'GT' })
      const records = Array.from({ length: 30 }, (_, i) => listing('GT', `two-${String(i).padStart(2, '0')}`, { zone: `Zona ${1 + (i % 3)}` }))
      const [one, two] = [worker(), worker()]
      one.start()
      two.start()
      for (let i = 0; i < records.length; i += 5) await ingest(records.slice(i, i + 5))
      await eventually('every listing arrives', () => at.receiver.distinct.length === records.length, 60_000)
      expect(at.receiver.distinct.map((r) => (r.body.data as Json).listing_id)).toEqual(records.map((r) => idOf(r.source_id)))
      expect(at.receiver.requests.every((r) => r.verified)).toBe(true)
    })

    test('a zone alert is sent when the zone\'s median price per m² first publishes, then again only once it moved by the threshold', async () => {
      const at = await receiver()
      await subscribe(at, { events: ['zone.statistics_changed'], country: 'CR', zone: 'Zona 40', threshold_pct: 10 })
      const sale = (id: string, price: number, day: number) =>
        listing('CR', id, { zone: 'Zona 40', operation: 'Venta', property_type: 'Apartamento', area_m2: 100, price, observed_at: `2026-05-${String(day).padStart(2, '0')}T00:00:00.000Z` })
      const w = worker()
      await ingest(['z1', 'z2', 'z3', 'z4', 'z5'].map((id) => sale(id, 100_000, 10)))
      await drain(w)
      const alerts = () => at.receiver.requests.filter((r) => r.type === 'zone.statistics_changed').map((r) => r.body.data as Json)
      expect(alerts()).toHaveLength(1)
      expect(alerts()[0]).toMatchObject({ country: 'CR', zone: 'Zona 40', slug: 'zona-40', median_ppm2_usd: 1000, previous_median_ppm2_usd: null, threshold_pct: 10 })
      // 5 % up: below the threshold, nothing.
      await ingest(['z1', 'z2', 'z3', 'z4', 'z5'].map((id) => sale(id, 105_000, 11)))
      await drain(w)
      expect(alerts()).toHaveLength(1)
      // 10 % up from the value sent (1,000 → 1,100): one alert, measured from 1,000.
      await ingest(['z1', 'z2', 'z3', 'z4', 'z5'].map((id) => sale(id, 110_000, 12)))
      await drain(w)
      expect(alerts()).toHaveLength(2)
      expect(alerts()[1]).toMatchObject({ median_ppm2_usd: 1100, previous_median_ppm2_usd: 1000, change_pct: 10 })
    })
  })
}
