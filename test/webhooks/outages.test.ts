import { writeFileSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { createClient } from 'redis'
import { describe, expect, type OnTestFinishedHandler, test } from 'vitest'
import { openPostgres } from '../../src/db/postgres.ts'
import { uniqueSchema } from '../support/databases.ts'
import { eventually, sleep } from '../support/eventually.ts'
import { startPrivatePostgres, unavailable } from '../support/private-services.ts'
import { freePort, type RunningServer, startServer, tempDataDir } from '../support/server.ts'
import { cliJson } from '../support/server-pair.ts'
import { type Received, TestReceiver } from '../support/webhook-receiver.ts'

/**
 * Issue 31, "Done when": webhooks delivered through the failures a deployment meets, with real server
 * processes (`bun src/main.ts`) on PostgreSQL and a local receiver that verifies every signature with
 * the `standardwebhooks` package. Each spec subscribes one webhook to every listing event, ingests a
 * stream of listing changes through the operator CLI while the failure happens, and then counts at
 * the receiver: every change `GET /listings/changes` has after the subscription arrived, first
 * arrivals in the feed's order, none lost, none extra, a message received twice only under its own
 * `webhook-id` and with the same body, and every signature verified.
 *
 * Retries wait 5 s, 30 s, 2 min… (src/domain/webhooks/retries.ts). Each failure here is shaped so the
 * third attempt of a message (about 35 s after its first) succeeds: the specs wait for the retries
 * the product really makes, and never for the 2-minute one. They take 30-90 s each, mostly waiting,
 * so they run at once (`describe.concurrent`): each has its own server processes, receivers, schema
 * (or private PostgreSQL), data directories and key, and nothing here measures time. Their timeouts
 * are generous because the machine they run on may be loaded.
 */

type Json = Record<string, any>

const { DATABASE_URL, REDIS_URL } = process.env
if (!DATABASE_URL || !REDIS_URL) console.warn('[skipped] webhook outages: needs DATABASE_URL and REDIS_URL')
const noPrivatePostgres = unavailable()
if (noPrivatePostgres) console.warn(`[skipped] webhooks while PostgreSQL is stopped: ${noPrivatePostgres}`)

const SIGNING_KEY = 'outages-spec-signing-key-0123456789abcdef'
const LISTING_EVENTS = ['listing.listed', 'listing.updated', 'listing.price_changed', 'listing.removed']
const COUNTRIES = ['GT', 'SV', 'HN', 'CR', 'PA']

/** Waiting for everything to arrive: two retries (5 s + 30 s) and a lease (30 s) with room for a loaded machine. */
const ALL_ARRIVE_MS = 150_000

/**
 * Step `step` of a stream of listing changes, as a feed file's lines: six verified listings first
 * seen (public at once), and the listings of the step before repriced, changed or delisted, so that
 * every kind of change flows.
 */
function feedStep(prefix: string, step: number): string {
  const at = (s: number, i: number) => `2026-11-${String(10 + s).padStart(2, '0')}T10:${String(i).padStart(2, '0')}:00Z`
  const base = (s: number, i: number) => ({
    source: 'broker', source_id: `${prefix}-${s}-${i}`, country: COUNTRIES[i % COUNTRIES.length], zone: `Zona ${1 + (i % 3)}`,
    operation: 'Venta', property_type: 'Apartamento', price: 100_000 + 1000 * s + i, currency: 'USD', area_m2: 80, bedrooms: 2, bathrooms: 1,
    title: `Apartamento ${prefix} ${s} ${i}`, broker: { id: 'outage-brk', name: 'Corredora Outage' }, url: null,
    listed_at: '2026-11-01T00:00:00Z', verified_at: '2026-11-02T00:00:00Z', status: 'active',
  })
  const lines: Json[] = []
  for (let i = 0; i < 6; i++) lines.push({ ...base(step, i), observed_at: at(step, i) })
  if (step > 0) {
    for (let i = 0; i < 6; i++) {
      const before = base(step - 1, i)
      if (i % 3 === 0) lines.push({ ...before, price: before.price - 5000, observed_at: at(step, 30 + i) })
      if (i % 3 === 1) lines.push({ ...before, bedrooms: 3, observed_at: at(step, 30 + i) })
      if (i === 5) lines.push({ ...before, status: 'delisted', observed_at: at(step, 30 + i) })
    }
  }
  return `${lines.map((line) => JSON.stringify(line)).join('\n')}\n`
}

/** The processes, receivers, schema and directories of one spec, all gone after it. */
class Deployment {
  readonly servers: RunningServer[] = []
  readonly receivers: TestReceiver[] = []
  readonly keyIds: string[] = []
  private readonly dataDirs: string[] = []
  private schema: string | null = null
  databaseUrl = ''
  key = ''

  /**
   * A deployment gone after the test whose `onTestFinished` is given, whatever its outcome (the test
   * context's own: the tests run at once, so the global hook would not know which test it is for).
   */
  static forTest(onTestFinished: (handler: OnTestFinishedHandler) => void): Deployment {
    const deployment = new Deployment()
    onTestFinished(() => deployment.dispose())
    return deployment
  }

  /** A fresh schema of the shared PostgreSQL (`search_path` in the URL isolates the servers in it), or the given database. */
  async database(url?: string): Promise<void> {
    if (url) {
      this.databaseUrl = url
      return
    }
    this.schema = uniqueSchema('e2e_webhooks')
    const setup = await openPostgres(DATABASE_URL!, { schema: this.schema, max: 1 })
    await setup.close()
    const withSchema = new URL(DATABASE_URL!)
    withSchema.searchParams.set('search_path', this.schema)
    this.databaseUrl = withSchema.toString()
  }

  /**
   * A server process delivering webhooks (a signing key shared by all, local receivers allowed), with
   * a data dir of its own and its metrics on METRICS_PORT.
   */
  async server(): Promise<RunningServer> {
    const dataDir = tempDataDir('mirador-webhooks-')
    this.dataDirs.push(dataDir)
    const server = await startServer({
      DATABASE_URL: this.databaseUrl, REDIS_URL: REDIS_URL!, DATA_DIR: dataDir, ACCESS_LOG: 'off',
      WEBHOOK_SIGNING_KEY: SIGNING_KEY, WEBHOOKS_ALLOW_LOCAL: 'on', METRICS_PORT: String(await freePort()),
    })
    this.servers.push(server)
    return server
  }

  /** An owner and a read/write key, made with the operator CLI. */
  async owner(server: RunningServer): Promise<void> {
    await cliJson(server, 'owner', 'create', '--id', 'subscriber', '--tier', 'enterprise')
    const issued = await cliJson<{ key: string; key_id: string }>(server, 'key', 'issue', '--owner', 'subscriber', '--scopes', 'read,write', '--actor', 'subscriber')
    this.keyIds.push(issued.key_id)
    this.key = issued.key
    await eventually(`${server.url} knows the key`, async () => (await this.get(server, '/api/v1/health')).status === 200)
  }

  get(server: RunningServer, path: string): Promise<Response> {
    return fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${this.key}` }, signal: AbortSignal.timeout(30_000) })
  }

  /** Where the change feed ends now. */
  async feedEnd(server: RunningServer): Promise<string> {
    let page = (await (await this.get(server, '/api/v1/listings/changes?limit=1000')).json()) as Json
    while (page.more) page = (await (await this.get(server, `/api/v1/listings/changes?after=${page.next_cursor}&limit=1000`)).json()) as Json
    return page.next_cursor as string
  }

  /** Every change after `cursor`, in log order. */
  async changesAfter(server: RunningServer, cursor: string): Promise<Json[]> {
    const changes: Json[] = []
    for (let more = true; more; ) {
      const response = await this.get(server, `/api/v1/listings/changes?after=${cursor}&limit=1000`)
      expect(response.status).toBe(200)
      const page = (await response.json()) as Json
      changes.push(...(page.changes as Json[]))
      ;[cursor, more] = [page.next_cursor, page.more]
    }
    return changes
  }

  /**
   * A receiver subscribed to every listing event through `server`; the cursor of the feed's end when it
   * subscribed (nothing is ingested meanwhile, so the changes after it are those after the subscription).
   */
  async subscribe(server: RunningServer): Promise<{ receiver: TestReceiver; from: string; webhookId: string }> {
    let secret = ''
    const receiver = await new TestReceiver(() => secret).start()
    this.receivers.push(receiver)
    const from = await this.feedEnd(server)
    const response = await fetch(`${server.url}/api/v1/webhooks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${this.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: receiver.url, events: LISTING_EVENTS }),
    })
    const answer = (await response.json()) as Json
    expect(response.status, JSON.stringify(answer)).toBe(201)
    secret = answer.secret
    return { receiver, from, webhookId: answer.webhook.id }
  }

  /** How many messages `server` delivered (its `mirador_webhook_attempts_total{outcome="delivered"}`). */
  async delivered(server: RunningServer): Promise<number> {
    const metrics = await (await fetch(`http://127.0.0.1:${server.env.METRICS_PORT}/metrics`)).text()
    return Number(/^mirador_webhook_attempts_total\{outcome="delivered"\} (\S+)$/m.exec(metrics)?.[1])
  }

  /** The latest attempts of a webhook (at most 100), oldest first, as GET /webhooks/{id}/deliveries shows them. */
  async attempts(server: RunningServer, webhookId: string): Promise<Json[]> {
    const response = await this.get(server, `/api/v1/webhooks/${webhookId}/deliveries?limit=100`)
    expect(response.status).toBe(200)
    return ((await response.json()) as Json).deliveries.toReversed()
  }

  /** Ingests step `step` of the stream through `server`'s operator socket (`mirador ingest FILE`). */
  async ingest(server: RunningServer, prefix: string, step: number): Promise<void> {
    const run = await this.ingestOnce(server, prefix, step)
    expect(run.code, `${run.stdout}${run.stderr}`).toBe(0)
  }

  ingestOnce(server: RunningServer, prefix: string, step: number) {
    const dir = tempDataDir('mirador-webhooks-feed-')
    this.dataDirs.push(dir)
    const file = join(dir, `${prefix}-${step}.ndjson`)
    writeFileSync(file, feedStep(prefix, step))
    return server.cli('ingest', file)
  }

  async dispose(): Promise<void> {
    await Promise.all(this.servers.map((s) => s.stop('SIGKILL')))
    await Promise.all(this.receivers.map((r) => r.stop()))
    if (this.schema) {
      const db = await openPostgres(DATABASE_URL!, { max: 1 })
      await db.exec(`drop schema if exists ${this.schema} cascade`)
      await db.close()
    }
    const raw = createClient({ url: REDIS_URL! })
    await raw.on('error', () => {}).connect()
    for (const keyId of this.keyIds) {
      const counters = await raw.keys(`mirador:rl:${keyId}:*`)
      if (counters.length) await raw.del(counters)
    }
    raw.destroy()
    await Promise.all(this.dataDirs.map((dir) => rm(dir, { recursive: true, force: true })))
  }
}

/**
 * What the receiver must have got: each change after the subscription, under one `webhook-id`, first
 * received in the feed's order, as the feed has it; nothing else; a message received again only with
 * its id and its body unchanged; every signature verified. Waits until each change arrived.
 */
async function expectEveryChangeDelivered(receiver: TestReceiver, changes: Json[]): Promise<void> {
  expect(changes.length).toBeGreaterThan(0)
  await eventually(`the receiver got ${changes.length} distinct messages (it has ${receiver.distinct.length})`, () => receiver.distinct.length >= changes.length, ALL_ARRIVE_MS)
  const distinct = receiver.distinct
  expect(distinct.map((r) => r.body.data)).toEqual(changes)
  expect(distinct.map((r) => r.type)).toEqual(changes.map((c) => `listing.${c.kind}`))
  const bodies = new Map(distinct.map((r) => [r.id, JSON.stringify(r.body)]))
  expect(receiver.requests.filter((r) => JSON.stringify(r.body) !== bodies.get(r.id)).map((r) => r.id)).toEqual([])
  expect(receiver.requests.filter((r) => !r.verified).map((r) => r.id)).toEqual([])
  console.info(`[webhook outages] ${changes.length} changes: ${distinct.length} messages received in order, ${receiver.requests.length} requests, ${resent(receiver.requests).length} messages received more than once`)
}

/** How often each message id was received, for those received more than once. */
const resent = (requests: readonly Received[]) => {
  const counts = new Map<string, number>()
  for (const r of requests) counts.set(r.id, (counts.get(r.id) ?? 0) + 1)
  return [...counts].filter(([, n]) => n > 1)
}

describe.skipIf(!DATABASE_URL || !REDIS_URL).concurrent('webhooks through outages, with real server processes', () => {
  test(
    'a receiver down for 30 s gets every change once it is back, in order, retries under the same webhook-id',
    async ({ onTestFinished }) => {
      // The receiver stops before the first message it misses is tried, and is back 30 s later: that
      // message's tries at 0, 5 and 35 s reach it on the third, before the 2-minute retry.
      const deployment = Deployment.forTest(onTestFinished)
      await deployment.database()
      const server = await deployment.server()
      await deployment.owner(server)
      const { receiver, from, webhookId } = await deployment.subscribe(server)
      await deployment.ingest(server, 'down', 0)
      await eventually('the first step arrived', () => receiver.distinct.length > 0, ALL_ARRIVE_MS)

      await receiver.stop()
      const stoppedAt = Date.now()
      for (let step = 1; step <= 3; step++) await deployment.ingest(server, 'down', step)
      await sleep(Math.max(0, stoppedAt + 30_000 - Date.now()))
      const beforeRestart = receiver.requests.length
      await receiver.start()
      await deployment.ingest(server, 'down', 4)

      await expectEveryChangeDelivered(receiver, await deployment.changesAfter(server, from))
      expect(receiver.requests.length).toBeGreaterThan(beforeRestart)
      // While it was down the same message was tried (no connection) until it got through.
      const attempts = await deployment.attempts(server, webhookId)
      const unreachable = attempts.filter((a) => a.outcome === 'unreachable')
      expect(unreachable.length).toBeGreaterThan(0)
      for (const failed of unreachable) expect(attempts.filter((a) => a.webhook_id === failed.webhook_id).at(-1)).toMatchObject({ outcome: 'delivered' })
    },
    // Ingesting takes a few seconds a step on a loaded machine, the outage 30 s, the retries 35 s.
    240_000,
  )

  test(
    'a receiver answering 500 for a while, then 204, gets every change, in order, the failed ones again under their webhook-id',
    async ({ onTestFinished }) => {
      const deployment = Deployment.forTest(onTestFinished)
      await deployment.database()
      const server = await deployment.server()
      await deployment.owner(server)
      const { receiver, from } = await deployment.subscribe(server)
      await deployment.ingest(server, 'err', 0)
      await eventually('the first step arrived', () => receiver.distinct.length > 0, ALL_ARRIVE_MS)

      // 500 for 20 s: a message first tried in that window fails once or twice (retried after 5 s, then 30 s).
      const failingUntil = Date.now() + 20_000
      const refused: string[] = []
      receiver.behave = (received) => {
        if (Date.now() >= failingUntil) return { status: 204 }
        refused.push(received.id)
        return { status: 500 }
      }
      for (let step = 1; step <= 4; step++) await deployment.ingest(server, 'err', step)

      await expectEveryChangeDelivered(receiver, await deployment.changesAfter(server, from))
      expect(refused.length).toBeGreaterThan(0)
      expect(resent(receiver.requests).map(([id]) => id)).toEqual(expect.arrayContaining([...new Set(refused)]))
    },
    // The steps, then a message's retries 5 s and 30 s after its failures.
    240_000,
  )

  test(
    'a receiver answering in 10 s for a while (past the 5 s deadline) gets every change, in order, the timed-out ones again under their webhook-id',
    async ({ onTestFinished }) => {
      const deployment = Deployment.forTest(onTestFinished)
      await deployment.database()
      const server = await deployment.server()
      await deployment.owner(server)
      const { receiver, from, webhookId } = await deployment.subscribe(server)
      await deployment.ingest(server, 'slow', 0)
      await eventually('the first step arrived', () => receiver.distinct.length > 0, ALL_ARRIVE_MS)

      // 10 s per answer for 15 s: a message first sent in that window times out once or twice.
      const slowUntil = Date.now() + 15_000
      const slowed: string[] = []
      receiver.behave = (received) => {
        if (Date.now() >= slowUntil) return { status: 204 }
        slowed.push(received.id)
        return { status: 204, delayMs: 10_000 }
      }
      for (let step = 1; step <= 4; step++) await deployment.ingest(server, 'slow', step)

      await expectEveryChangeDelivered(receiver, await deployment.changesAfter(server, from))
      expect(slowed.length).toBeGreaterThan(0)
      expect(resent(receiver.requests).map(([id]) => id)).toEqual(expect.arrayContaining([...new Set(slowed)]))
      expect((await deployment.attempts(server, webhookId)).filter((a) => a.outcome === 'timeout').map((a) => a.webhook_id)).toEqual(expect.arrayContaining([...new Set(slowed)]))
    },
    // The steps, then timeouts of 5 s and retries 5 s and 30 s after them.
    240_000,
  )

  test(
    'a server SIGKILLed while its receiver holds the answer: another server takes the line over after the 30 s lease and sends the same webhook-id again',
    async ({ onTestFinished }) => {
      const deployment = Deployment.forTest(onTestFinished)
      await deployment.database()
      const first = await deployment.server()
      await deployment.owner(first)
      const { receiver, from } = await deployment.subscribe(first)
      // The fourth message is held (the answer would come in 60 s): its sender dies meanwhile.
      let held: string | null = null
      receiver.behave = (received, count) => {
        if (count !== 4) return { status: 204 }
        held = received.id
        return { status: 204, delayMs: 60_000 }
      }
      await deployment.ingest(first, 'kill', 0)
      await eventually('the fourth message is held at the receiver', () => held !== null, ALL_ARRIVE_MS)
      await first.stop('SIGKILL')

      const second = await deployment.server()
      for (let step = 1; step <= 2; step++) await deployment.ingest(second, 'kill', step)

      await expectEveryChangeDelivered(receiver, await deployment.changesAfter(second, from))
      expect(resent(receiver.requests)).toContainEqual([held, 2])
    },
    // Two server starts, the 30 s lease, the steps.
    240_000,
  )

  test.skipIf(noPrivatePostgres !== null)(
    'PostgreSQL stopped for 5 s while changes are ingested and delivered: every change arrives, in order, the server keeps serving',
    async ({ onTestFinished }) => {
      const database = await startPrivatePostgres()
      onTestFinished(() => database.dispose())
      // Disposed before the database (the hooks run last first): its servers go before their PostgreSQL.
      const deployment = Deployment.forTest(onTestFinished)
      await deployment.database(database.url)
      const server = await deployment.server()
      await deployment.owner(server)
      const { receiver, from } = await deployment.subscribe(server)
      // Answers take 300 ms, so that deliveries are in flight when the database goes.
      receiver.behave = () => ({ status: 204, delayMs: 300 })
      await deployment.ingest(server, 'pg', 0)
      await eventually('the first step is being delivered', () => receiver.distinct.length > 0, ALL_ARRIVE_MS)

      // The operator keeps ingesting, trying a step again while the database is away.
      let failedIngests = 0
      const ingesting = (async () => {
        for (let step = 1; step <= 4; step++) {
          for (let tries = 1; (await deployment.ingestOnce(server, 'pg', step)).code !== 0; tries++) {
            failedIngests += 1
            if (tries === 60) throw new Error(`step ${step} was refused 60 times`)
            await sleep(1000)
          }
        }
      })()
      await sleep(1000)
      await database.stop()
      await sleep(5000)
      await database.start()
      await ingesting

      await expectEveryChangeDelivered(receiver, await deployment.changesAfter(server, from))
      expect((await deployment.get(server, '/api/v1/health')).status).toBe(200)
      console.info(`[webhook outages] PostgreSQL stopped 5 s: ${failedIngests} ingest runs refused meanwhile, ${receiver.requests.length} requests for ${receiver.distinct.length} messages`)
    },
    // A private cluster, the outage, and a line whose lease was held when the database went (30 s).
    240_000,
  )

  test(
    'two server processes on one PostgreSQL deliver two webhooks at once: each receiver gets every change once, in order',
    async ({ onTestFinished }) => {
      const deployment = Deployment.forTest(onTestFinished)
      await deployment.database()
      const a = await deployment.server()
      const b = await deployment.server()
      await deployment.owner(a)
      const one = await deployment.subscribe(a)
      const two = await deployment.subscribe(b)
      // Answers take 50 ms, so that both processes have work in hand at once.
      for (const { receiver } of [one, two]) receiver.behave = () => ({ status: 204, delayMs: 50 })
      for (let step = 0; step <= 5; step++) await deployment.ingest(step % 2 === 0 ? a : b, 'pair', step)

      await expectEveryChangeDelivered(one.receiver, await deployment.changesAfter(b, one.from))
      await expectEveryChangeDelivered(two.receiver, await deployment.changesAfter(a, two.from))
      // A line is leased to one process at a time: nothing is sent twice when no answer failed, and
      // each request is one process's delivery.
      expect(resent(one.receiver.requests)).toEqual([])
      expect(resent(two.receiver.requests)).toEqual([])
      // A process counts a delivery once it has the answer, a moment after the receiver counted the request.
      const requests = one.receiver.requests.length + two.receiver.requests.length
      let byProcess: number[] = []
      await eventually('the two processes counted the deliveries', async () => {
        byProcess = [await deployment.delivered(a), await deployment.delivered(b)]
        return byProcess[0]! + byProcess[1]! >= requests
      })
      expect(byProcess[0]! + byProcess[1]!).toBe(requests)
      console.info(`[webhook outages] delivered by process a: ${byProcess[0]}, by process b: ${byProcess[1]}`)
    },
    // Two server starts and six steps through the CLI on a loaded machine.
    240_000,
  )
})
