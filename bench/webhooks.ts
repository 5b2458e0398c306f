/**
 * Webhook delivery lag at 100 events/s (issue 31: p99 ≤ 2 s). The real server (`bun src/main.ts`) on
 * PostgreSQL (a fresh schema), one webhook subscribed to every listing event, a receiver in this
 * process answering 204 at once; this process appends listing changes to the same PostgreSQL
 * (src/listings/ingest.ts, as the CLI's ingest does) at the given rate, in batches every 100 ms,
 * half of them new listings and half repricings of listings seen earlier. The lag of a message is
 * from its change's append having returned here to its request reaching the receiver. The server's
 * own `mirador_webhook_delivery_lag_seconds` (from the change's `at`, its `observed_at` set to the
 * moment it is appended) is read from METRICS_PORT as a cross-check.
 *
 *   npx bun bench/webhooks.ts [--seconds 60] [--rate 100] [--no-write]   (npm run bench:webhooks)
 *
 * Results are printed and written to bench/results.md (section "Webhook delivery lag") unless --no-write.
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { openPostgres } from '../src/db/postgres.ts'
import type { FeedRecord } from '../src/domain/listings/feed.ts'
import { listingId } from '../src/domain/listings/listing.ts'
import { DEFAULT_FX } from '../src/domain/market/fx.ts'
import { openSqlEventStore } from '../src/eventstore/sql-event-store.ts'
import { ingestRecords } from '../src/listings/ingest.ts'
import { BUN, freePort, loadAverage, machine, percentile, ROOT, sleep, startProcess, waitFor, writeResultsSection } from './support.ts'

const { values: flags } = parseArgs({
  options: {
    seconds: { type: 'string', default: '60' },
    rate: { type: 'string', default: '100' },
    'no-write': { type: 'boolean', default: false },
  },
})
const seconds = Number(flags.seconds)
const rate = Number(flags.rate)
const TICK_MS = 100
const perTick = Math.max(2, Math.round((rate * TICK_MS) / 1000))
const baseUrl = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test'
const schema = `bench_webhooks_${process.pid}`
const withSchema = new URL(baseUrl)
withSchema.searchParams.set('search_path', schema)

const uptime = () => spawnSync('uptime', { encoding: 'utf8' }).stdout.trim()

/** Runs the CLI as an operator would; returns its stdout. */
function cli(env: Record<string, string>, args: string[]): string {
  const run = spawnSync(BUN, ['src/cli.ts', ...args], { cwd: ROOT, env: { ...process.env, ...env }, encoding: 'utf8' })
  if (run.status !== 0) throw new Error(`cli ${args.join(' ')} failed:\n${run.stdout}\n${run.stderr}`)
  return run.stdout
}

/** A verified broker listing observed now (its change's `at`), priced `price`. */
function record(sourceId: string, price: number, country: FeedRecord['country']): FeedRecord {
  const now = new Date().toISOString()
  return {
    source: 'broker', source_id: sourceId, country, zone: 'Zona 3', operation: 'Venta', property_type: 'Apartamento', price, currency: 'USD',
    area_m2: 90, bedrooms: 2, bathrooms: 2, title: `Apartamento ${sourceId}`, broker: { id: 'bench-brk', name: 'Corredora Bench' }, url: null,
    listed_at: '2026-11-01T00:00:00Z', verified_at: '2026-11-01T00:00:00Z', status: 'active', observed_at: now,
  }
}

// The receiver: when each message (by listing and kind) first arrived.
const arrived = new Map<string, number>()
let requests = 0
const receiver = Bun.serve({
  port: 0,
  hostname: '127.0.0.1',
  async fetch(request) {
    const body = (await request.json()) as { data: { listing_id: string; kind: string } }
    requests += 1
    const key = `${body.data.listing_id}:${body.data.kind}`
    if (!arrived.has(key)) arrived.set(key, Date.now())
    return new Response(null, { status: 204 })
  },
})

const setup = await openPostgres(baseUrl, { schema, max: 1 })
await setup.close()
const dataDir = mkdtempSync(join(os.tmpdir(), 'mirador-bench-webhooks-'))
const [port, metricsPort] = [await freePort(), await freePort()]
const env = {
  DATA_DIR: dataDir, DATABASE_URL: withSchema.toString(), PORT: String(port), METRICS_PORT: String(metricsPort), ACCESS_LOG: 'off', DEMO_SEED: 'off',
  WEBHOOK_SIGNING_KEY: 'bench-webhooks-signing-key-0123456789abcdef', WEBHOOKS_ALLOW_LOCAL: 'on',
}
const server = startProcess(['src/main.ts'], env)
const db = await openPostgres(withSchema.toString(), { schema })
const loadBefore = uptime()
try {
  const base = `http://127.0.0.1:${port}/api/v1`
  await waitFor(`${base}/health`, 401, {}, server.output, 300_000)
  cli(env, ['owner', 'create', '--id', 'bench', '--tier', 'enterprise'])
  const key = /mrd_[A-Za-z0-9]+/.exec(cli(env, ['key', 'issue', '--owner', 'bench', '--scopes', 'read,write', '--actor', 'bench']))![0]
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
  await waitFor(`${base}/health`, 200, { headers }, server.output)
  const subscribed = await fetch(`${base}/webhooks`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ url: `http://127.0.0.1:${receiver.port}/hook`, events: ['listing.listed', 'listing.updated', 'listing.price_changed', 'listing.removed'] }),
  })
  if (subscribed.status !== 201) throw new Error(`subscribing failed: ${subscribed.status} ${await subscribed.text()}`)
  const store = await openSqlEventStore(db)

  // Warm-up: one listing through, so that the line is open and every connection made.
  await ingestRecords(store, [record('warm-up', 100_000, 'GT')], DEFAULT_FX)
  const warm = Date.now()
  while (!arrived.has(`${listingId('broker', 'warm-up')}:listed`)) {
    if (Date.now() - warm > 120_000) throw new Error(`the warm-up message never arrived:\n${server.output()}`)
    await sleep(20)
  }
  arrived.clear()

  // The load: every 100 ms a batch, half new listings, half repricings of the new listings of 2 s before.
  const appended = new Map<string, number>()
  const countries: FeedRecord['country'][] = ['GT', 'SV', 'HN', 'CR', 'PA', 'DO', 'BZ', 'BR']
  const ticks = Math.round((seconds * 1000) / TICK_MS)
  const started = Date.now()
  let lateTicks = 0
  for (let tick = 0; tick < ticks; tick++) {
    const due = started + tick * TICK_MS
    const wait = due - Date.now()
    if (wait > 0) await sleep(wait)
    else if (wait < -TICK_MS) lateTicks += 1
    const batch: FeedRecord[] = []
    const keys: string[] = []
    for (let i = 0; i < perTick; i++) {
      const earlier = tick - 20
      if (i % 2 === 1 && earlier >= 0) {
        const id = `bench-${earlier}-${i - 1}`
        batch.push(record(id, 95_000 - tick, countries[(i - 1) % countries.length]!))
        keys.push(`${listingId('broker', id)}:price_changed`)
      } else {
        const id = `bench-${tick}-${i}`
        batch.push(record(id, 100_000, countries[i % countries.length]!))
        keys.push(`${listingId('broker', id)}:listed`)
      }
    }
    await ingestRecords(store, batch, DEFAULT_FX)
    const at = Date.now()
    for (const k of keys) appended.set(k, at)
  }
  const appendSeconds = (Date.now() - started) / 1000
  console.log(`appended ${appended.size} changes in ${appendSeconds.toFixed(1)} s (${(appended.size / appendSeconds).toFixed(1)}/s; ${lateTicks} batches more than 100 ms late)`)

  const drained = Date.now()
  while ([...appended.keys()].some((k) => !arrived.has(k)) && Date.now() - drained < 300_000) await sleep(100)
  const loadAfter = uptime()

  const lags = [...appended].filter(([k]) => arrived.has(k)).map(([k, at]) => arrived.get(k)! - at).sort((a, b) => a - b)
  const missing = appended.size - lags.length
  const stat = (p: number) => `${(percentile(lags, p) / 1000).toFixed(2)} s`

  // The server's own histogram (from each change's `at` to its 2xx; the warm-up included).
  const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()
  const series = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(metrics)?.[1] ?? Number.NaN)
  const count = series('mirador_webhook_delivery_lag_seconds_count')
  const sum = series('mirador_webhook_delivery_lag_seconds_sum')
  const buckets = [...metrics.matchAll(/^mirador_webhook_delivery_lag_seconds_bucket\{le="([^"]+)"\} (\S+)$/gm)].map((m) => ({ le: m[1]!, n: Number(m[2]) }))
  const bucketOf = (p: number) => buckets.find((b) => b.n >= (p / 100) * count)?.le ?? '?'
  const attempts = [...metrics.matchAll(/^mirador_webhook_attempts_total\{outcome="([^"]+)"\} (\S+)$/gm)].filter((m) => Number(m[2]) > 0).map((m) => `${m[1]} ${m[2]}`).join(', ')

  const table = [
    '| changes appended | delivered | p50 | p90 | p99 | max | requests |',
    '|---:|---:|---:|---:|---:|---:|---:|',
    `| ${appended.size} (${(appended.size / appendSeconds).toFixed(1)}/s) | ${lags.length}${missing ? ` (${missing} never arrived)` : ''} | ${stat(50)} | ${stat(90)} | ${stat(99)} | ${(lags.at(-1)! / 1000).toFixed(2)} s | ${requests} |`,
  ].join('\n')
  const crossCheck =
    `The server's \`mirador_webhook_delivery_lag_seconds\`: ${count} deliveries (the warm-up's included), mean ${(sum / count).toFixed(2)} s, ` +
    `p50 within the bucket ≤ ${bucketOf(50)} s, p99 within ≤ ${bucketOf(99)} s; attempts: ${attempts}.`
  console.log(table)
  console.log(crossCheck)
  if (process.env.WEBHOOK_PROFILE) console.log(server.output().split("\n").filter((l) => l.includes("WHPROF")).at(-1))
  console.log(`load: before ${loadBefore}; after ${loadAfter}`)
  if (!flags['no-write']) {
    writeResultsSection(
      'Webhook delivery lag',
      `\`npm run bench:webhooks\` (\`bun bench/webhooks.ts --seconds ${seconds} --rate ${rate}\`; ${machine()}; \`uptime\` before: ${loadBefore}; after: ${loadAfter}). ` +
        'The real server (Bun) on PostgreSQL, one webhook subscribed to every listing event, a receiver in the bench process answering 204 at once. ' +
        `The bench appends listing changes to the same PostgreSQL (src/listings/ingest.ts) in batches of ${perTick} every 100 ms, half new listings and half repricings; ` +
        'the lag of a message is from its append having returned to its request reaching the receiver. Issue 31 asks p99 ≤ 2 s.\n\n' +
        `${table}\n\n${crossCheck}`,
    )
  }
} finally {
  await server.stop()
  await receiver.stop(true)
  await db.exec(`drop schema if exists ${schema} cascade`)
  await db.close()
  rmSync(dataDir, { recursive: true, force: true })
}
