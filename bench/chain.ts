/**
 * The tamper-evident log (decision 0115): what the chain costs appends, and how fast `audit verify`
 * walks a large log.
 *
 *   npx bun bench/chain.ts [--main /work/main] [--append-events 40000] [--rounds 3]
 *                          [--verify-events 1000000] [--pglite-verify-events 200000] [--no-pglite] [--no-verify] [--same-adapters] [--no-write]
 *
 * Appends: the same events appended in batches of 100 streams (one `appendMany`, as an ingest
 * appends) and one by one (`append`, as the API records a briefing), into a fresh store of the code
 * at `--main` (before the chain; its database adapters too, unless --same-adapters: then the event
 * store's code alone is compared) and of this tree, alternately, `--rounds` times, on PostgreSQL
 * (DATABASE_URL) and PGlite; the median of the rounds is compared, in events/s and in CPU time per
 * event (this process and the database's backends: robust to the load of a shared machine). Verify: a
 * log of `--verify-events` events appended in batches of 1,000 (on PostgreSQL kept in the schema
 * bench_chain_verify and reused by later runs), then `verifyLog` over all of it, timed and in CPU, as
 * `audit verify` walks it (the store checks ranges) and event by event (the walk before that).
 * Results are printed and written to bench/results.md (section "Tamper-evident log", or "Tamper-evident
 * log: audit verify" with --no-append) unless --no-write.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { verifyLog } from '../src/audit/verify.ts'
import { openPglite } from '../src/db/pglite.ts'
import type { Db } from '../src/db/port.ts'
import { openPostgres } from '../src/db/postgres.ts'
import type { EventStore, NewEvent } from '../src/eventstore/port.ts'
import { openSqlEventStore } from '../src/eventstore/sql-event-store.ts'
import { loadAverage, machine, writeResultsSection } from './support.ts'

const { values: args } = parseArgs({
  options: {
    main: { type: 'string', default: '/work/main' },
    'append-events': { type: 'string', default: '40000' },
    'single-appends': { type: 'string', default: '2000' },
    rounds: { type: 'string', default: '3' },
    'verify-events': { type: 'string', default: '1000000' },
    'pglite-verify-events': { type: 'string', default: '200000' },
    'no-pglite': { type: 'boolean', default: false },
    'no-append': { type: 'boolean', default: false },
    'no-verify': { type: 'boolean', default: false },
    'same-adapters': { type: 'boolean', default: false },
    'no-write': { type: 'boolean', default: false },
  },
})

type OpenStore = (db: Db) => Promise<EventStore>
/** The database adapters a store is opened on. */
type Adapters = { openPglite: typeof openPglite; openPostgres: typeof openPostgres }
const current: Adapters = { openPglite, openPostgres }
/** A version of the code: its event store and its adapters. */
type Code = { open: OpenStore; adapters: Adapters }
const DATABASE_URL = process.env.DATABASE_URL

/** A listing-like event of about 400 bytes of JSON. */
const eventOf = (n: number): NewEvent => ({
  id: crypto.randomUUID(),
  type: 'ListingObserved',
  data: {
    source: 'bench',
    source_id: `b-${n}`,
    country: 'ES',
    zone: `z-${n % 97}`,
    operation: n % 3 === 0 ? 'rent' : 'sale',
    property_type: 'flat',
    price: 100_000 + (n % 5000) * 37,
    currency: 'EUR',
    area_m2: 40 + (n % 160),
    bedrooms: n % 5,
    bathrooms: 1 + (n % 3),
    lat: 40 + (n % 1000) / 1000,
    lon: -3 - (n % 1000) / 1000,
    verified_at: null,
    broker: { name: `Broker ${n % 50}`, id: `br-${n % 50}` },
    observed_at: new Date(Date.UTC(2026, 0, 1) + n * 1000).toISOString(),
  },
  metadata: { actor: 'bench' },
})

/** Appends `count` events in `appendMany` batches of `perBatch` streams (one event each); returns events/s. */
async function appendBatches(store: EventStore, count: number, perBatch: number, from = 0, progress?: (done: number) => void): Promise<number> {
  const start = performance.now()
  for (let n = from; n < from + count; n += perBatch) {
    const size = Math.min(perBatch, from + count - n)
    await store.appendMany(Array.from({ length: size }, (_, i) => ({ stream: `listing-b${n + i}`, events: [eventOf(n + i)], expected: 'no_stream' as const })))
    progress?.(n + size - from)
  }
  return count / ((performance.now() - start) / 1000)
}

/** Appends `count` events one `append` each; returns events/s. */
async function appendSingles(store: EventStore, count: number): Promise<number> {
  const start = performance.now()
  for (let n = 0; n < count; n++) await store.append(`briefing-b${n}`, [eventOf(n)], 'no_stream')
  return count / ((performance.now() - start) / 1000)
}

/**
 * CPU time spent so far by this process and by the database's backends serving `db` (PostgreSQL runs
 * on this machine: its backends' /proc entries; PGlite runs in this process), in ms. On a shared,
 * loaded machine wall-clock rates swing by 2–3× between rounds; CPU per event does not.
 */
async function cpuMeter(db: Db): Promise<() => number> {
  const own = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000 }
  if (db.kind !== 'postgres') return own
  // Ten statements at once open (and name) every connection of the pool.
  const pids = new Set((await Promise.all(Array.from({ length: 10 }, () => db.query<{ pid: number }>('select pg_backend_pid() as pid, pg_sleep(0.05)')))).map(([row]) => row!.pid))
  const tick = 1000 / 100
  const backend = (pid: number) => {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
      return (Number(fields[11]) + Number(fields[12])) * tick
    } catch {
      return 0
    }
  }
  return () => own() + [...pids].reduce((sum, pid) => sum + backend(pid), 0)
}

type Opened = { db: Db; dispose(): Promise<void> }
/** `fresh`: an empty store; `kept`: the verify log, kept between runs on PostgreSQL (schema bench_chain_verify, the only one this benchmark leaves). */
type Target = { name: string; fresh(adapters?: Adapters): Promise<Opened>; kept(): Promise<Opened> }

function targets(): Target[] {
  const list: Target[] = []
  if (DATABASE_URL) {
    const url = DATABASE_URL
    list.push({
      name: 'PostgreSQL',
      async fresh(adapters = current) {
        const schema = `bench_chain_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 6)}`
        const db = await adapters.openPostgres(url, { schema })
        return {
          db,
          async dispose() {
            await db.close()
            const admin = await openPostgres(url, { max: 1 })
            await admin.exec(`drop schema if exists ${schema} cascade`)
            await admin.close()
          },
        }
      },
      async kept() {
        const db = await openPostgres(url, { schema: 'bench_chain_verify' })
        return { db, dispose: () => db.close() }
      },
    })
  }
  const inMemory = async (adapters = current) => {
    const db = await adapters.openPglite()
    return { db, dispose: () => db.close() }
  }
  if (!args['no-pglite']) list.push({ name: 'PGlite', fresh: inMemory, kept: () => inMemory() })
  return list
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
const fmt = (n: number) => Math.round(n).toLocaleString('en-US')

/** One round of both workloads on a fresh store of `open`. */
async function appendRound(target: Target, code: Code, events: number, singles: number) {
  const { db, dispose } = await target.fresh(code.adapters)
  const store = await code.open(db)
  const cpu = await cpuMeter(db)
  const before = cpu()
  const batched = await appendBatches(store, events, 100)
  const batchedCpu = ((cpu() - before) * 1000) / events
  const single = await appendSingles(store, singles)
  await store.close()
  await dispose()
  return { batched, single, batchedCpu }
}

async function appendCost(target: Target, codes: Record<'main' | 'chain', Code>): Promise<string> {
  const rounds = Number(args.rounds)
  type Round = { batched: number; single: number; batchedCpu: number }
  const results = { main: [] as Round[], chain: [] as Round[] }
  const load = [loadAverage()]
  for (let r = 0; r < rounds; r++) {
    for (const code of ['main', 'chain'] as const) {
      results[code].push(await appendRound(target, codes[code], Number(args['append-events']), Number(args['single-appends'])))
      console.error(`${target.name} round ${r + 1} ${code}: ${JSON.stringify(results[code].at(-1))}`)
    }
    load.push(loadAverage())
  }
  const cpuRow = () => {
    const [before, after] = [median(results.main.map((x) => x.batchedCpu)), median(results.chain.map((x) => x.batchedCpu))]
    return `| ${target.name} | CPU µs per event of appendMany (this process + the database), lower is better | ${before.toFixed(0)} | ${after.toFixed(0)} | ${(((after - before) / before) * 100).toFixed(1)} % | ${results.main.map((x) => x.batchedCpu.toFixed(0)).join(' / ')} → ${results.chain.map((x) => x.batchedCpu.toFixed(0)).join(' / ')} |`
  }
  const row = (label: string, key: 'batched' | 'single') => {
    const [before, after] = [median(results.main.map((x) => x[key])), median(results.chain.map((x) => x[key]))]
    return `| ${target.name} | ${label} | ${fmt(before)} | ${fmt(after)} | ${(((after - before) / before) * 100).toFixed(1)} % | ${results.main.map((x) => fmt(x[key])).join(' / ')} → ${results.chain.map((x) => fmt(x[key])).join(' / ')} |`
  }
  console.error(`load average during ${target.name}: ${load.join(', ')}`)
  loads.push(`${target.name}: ${load.join(', ')}`)
  return [row(`appendMany, 100 streams × 1 event, ${fmt(Number(args['append-events']))} events`, 'batched'), cpuRow(), row(`append, 1 event, ${fmt(Number(args['single-appends']))} appends`, 'single')].join('\n')
}

/** How `audit verify` walks a SQL store: the store checks the links range by range, or every event is read (what stores without `vouchChain` get, and the version before it). */
const VERIFY_MODES = {
  'checked by SQL, range by range': (store: EventStore) => store,
  'event by event': (store: EventStore): EventStore => ({ ...store, vouchChain: undefined }),
}

async function verifySpeed(target: Target, events: number): Promise<string[]> {
  const { db, dispose } = await target.kept()
  const store = await openSqlEventStore(db)
  const held = await store.headPosition()
  const appendRate = held >= events ? NaN : await appendBatches(store, events - held, 1000, held, (done) => done % 100_000 === 0 && console.error(`${target.name}: ${done} events appended`))
  // Read once before either walk is timed: the first walk would otherwise pay for the log not yet
  // in the operating system's cache (at 1M on PostgreSQL: 12 s cold against 4 s warm) and the second not.
  await db.query('select count(*), sum(length(data::text)), sum(length(metadata::text)) from mirador_events')
  const rows: string[] = []
  for (const [mode, walked] of Object.entries(VERIFY_MODES)) {
    const loadBefore = loadAverage()
    const cpu = await cpuMeter(db)
    const cpuBefore = cpu()
    const start = performance.now()
    const verified = await verifyLog(walked(store))
    const seconds = (performance.now() - start) / 1000
    const cpuSeconds = (cpu() - cpuBefore) / 1000
    if (verified.fault || verified.events < events) throw new Error(`verify: ${JSON.stringify(verified)}`)
    console.error(`${target.name} verify ${mode}: ${seconds.toFixed(1)} s`)
    rows.push(
      `| ${target.name} | ${mode} | ${fmt(verified.events)} | ${seconds.toFixed(1)} s | **${fmt(verified.events / seconds)}** | ${loadBefore} | ${cpuSeconds.toFixed(1)} s | ${fmt(verified.events / cpuSeconds)} | ${Number.isNaN(appendRate) ? 'kept from a previous run' : fmt(appendRate)} |`,
    )
  }
  await store.close()
  await dispose()
  return rows
}

const main = await import(join(args.main, 'src/eventstore/sql-event-store.ts'))
// Before is the code at --main whole, its database adapters included: what appending cost then.
const mainAdapters: Adapters = { ...(await import(join(args.main, 'src/db/pglite.ts'))), ...(await import(join(args.main, 'src/db/postgres.ts'))) }
const codes = {
  main: { open: (db: Db) => main.openSqlEventStore(db) as Promise<EventStore>, adapters: args['same-adapters'] ? current : mainAdapters },
  chain: { open: (db: Db) => openSqlEventStore(db), adapters: current },
}
const appendRows: string[] = []
/** The load average before the first round and after each, per store. */
const loads: string[] = []
const verifyRows: string[] = []
for (const target of targets()) {
  if (!args['no-append']) appendRows.push(await appendCost(target, codes))
  if (!args['no-verify']) verifyRows.push(...await verifySpeed(target, Number(target.name === 'PGlite' ? args['pglite-verify-events'] : args['verify-events'])))
}
const appending = `### Appending, before (the code at --main, no chain) and after (the chain), same run, alternating; median of ${args.rounds} rounds

| store | workload | events/s before | events/s after | change | rounds (before → after) |
|---|---|---|---|---|---|
${appendRows.join('\n')}

Load average (1 min) before the first round and after each: ${loads.join('; ')}.

`
const verifying = `### \`audit verify\` (verifyLog over the whole log), both walks in the same run, one after the other

| store | walk | events | time | events/s | load average | CPU (this process + database) | events per CPU second | append rate while loading (events/s) |
|---|---|---|---|---|---|---|---|---|
${verifyRows.join('\n')}
`
const body = `Measured ${new Date().toISOString().slice(0, 16)} UTC on ${machine()}, load average (1 min) given per run (the machine is shared).
\`npx bun bench/chain.ts ${process.argv.slice(2).join(' ')}\`

${args['no-append'] ? '' : appending}${args['no-verify'] ? '' : verifying}`
console.log(body)
// A run without appends has its own section: the last append figures stay where they are.
if (!args['no-write']) writeResultsSection(args['no-append'] ? 'Tamper-evident log: audit verify' : 'Tamper-evident log', body)
