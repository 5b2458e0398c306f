/**
 * Proves the synthetic market loader (projections/listings/synthetic.ts) faithful: the listings it
 * writes straight into the read model are exactly those the listings projection writes when the same
 * listings arrive as feed lines through the event store.
 */
import { liveTables } from '../projections/engine/live-tables.ts'
import { ProjectionRunner } from '../projections/engine/runner.ts'
import { listingsProjection } from '../projections/listings/projection.ts'
import { advanceCheckpoint, checkpointOf } from '../projections/engine/generations.ts'
import { CHANGE_ROW_NAMES } from '../projections/listings/change-rows.ts'
import { comparedRows } from '../projections/listings/table-measures.ts'
import {
  type LoadSummary,
  loadSyntheticListings,
  type SyntheticListing,
  syntheticListings,
  syntheticLogEnd,
} from '../projections/listings/synthetic.ts'
import type { Db } from '../src/db/port.ts'
import { toIso, toNumber } from '../src/db/port.ts'
import { openPostgres } from '../src/db/postgres.ts'
import type { FeedRecord } from '../src/domain/listings/feed.ts'
import { DEFAULT_FX } from '../src/domain/market/fx.ts'
import { openSqlEventStore } from '../src/eventstore/sql-event-store.ts'
import { ingestRecords } from '../src/listings/ingest.ts'

/**
 * The live generation of the listings read model of `db` holding exactly synthetic listings
 * 1…count: the registry is prepared as a server would, then the generation's tables are filled
 * straight (resuming an interrupted load). Its checkpoint is then where a fold of the synthetic log
 * would stand (`syntheticLogEnd`), and the event store numbers its next event after that log, so an
 * event ingested later (bench/http.ts adds some) follows it in the change feed instead of taking a
 * position a change row already holds.
 */
export async function loadListings(db: Db, count: number, progress: (line: string) => void): Promise<LoadSummary> {
  const store = await openSqlEventStore(db)
  await new ProjectionRunner(db, store, [listingsProjection]).prepare()
  const head = await store.headPosition()
  await store.close()
  const live = await liveTables(db).of(listingsProjection)
  const summary = await loadSyntheticListings(db, live.tables, count, progress)
  const end = syntheticLogEnd(count)
  if ((await checkpointOf(db, listingsProjection.name, live)) < end) {
    if (head > 0) throw new Error(`the event store holds ${head} events below the synthetic log's end (${end}): drop the schema and run again`)
    await db.transaction(async (tx) => {
      await advanceCheckpoint(tx, listingsProjection.name, live, end)
      await tx.query(`alter table mirador_events alter column global_position restart with ${end + 1}`)
    })
  }
  return summary
}

/** The feed lines that tell a generated listing's story: one per event time, each with the whole state then. */
function feedLines(g: SyntheticListing): FeedRecord[] {
  const at = (value: unknown) => (value === null ? null : toIso(value))
  const [seen, verifiedAt, ver, p1, p2, del] = [at(g.t_seen)!, at(g.verified_at), at(g.t_ver), at(g.t_p1), at(g.t_p2), at(g.t_del)]
  const times = [...new Set([seen, ver, p1, p2, del].filter((t): t is string => t !== null))].sort()
  return times.map((t) => ({
    source: g.source,
    source_id: g.source_id,
    ...g.details,
    price: p2 !== null && p2 <= t ? g.p2 : p1 !== null && p1 <= t ? g.p1 : g.p0,
    currency: g.currency,
    verified_at: ver !== null && ver <= t ? verifiedAt : null,
    status: del !== null && del <= t ? 'delisted' : 'active',
    observed_at: t,
  }))
}

/**
 * Loads listings 1…sample with the loader into one fresh schema, ingests the same listings as feed
 * lines through the event store and the listings projection into another, and compares the tables
 * (listings, history, zones, changes) row for row. Returns the number of rows compared; throws on any difference.
 */
export async function checkLoader(
  databaseUrl: string,
  sample: number,
): Promise<{ listings: number; history: number; changes: number; events: number }> {
  const suffix = `${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 6)}`
  const [loaded, projected] = [`bench_check_load_${suffix}`, `bench_check_events_${suffix}`]
  const loadDb = await openPostgres(databaseUrl, { schema: loaded })
  const eventDb = await openPostgres(databaseUrl, { schema: projected })
  try {
    await loadListings(loadDb, sample, () => {})
    const generated = await syntheticListings(loadDb, 1, sample + 1)
    const store = await openSqlEventStore(eventDb)
    const runner = new ProjectionRunner(eventDb, store, [listingsProjection])
    const records = generated.flatMap((g) => feedLines(g)).sort((a, b) => (a.observed_at < b.observed_at ? -1 : a.observed_at > b.observed_at ? 1 : 0))
    await ingestRecords(store, records, DEFAULT_FX, { concurrency: 8 })
    await runner.catchUp()
    const events = toNumber((await eventDb.query<{ n: unknown }>('select count(*) as n from mirador_events'))[0]!.n)
    const differences: string[] = []
    const counts = { listings: 0, history: 0, changes: 0 }
    const t = (await liveTables(eventDb).of(listingsProjection)).tables
    for (const [table, key] of [
      [t.listings, 'listings'],
      [t.history, 'history'],
      [t.zones, null],
      [t.changes, 'changes'],
    ] as const) {
      const [ours, theirs] = [comparedRows(loaded, table, t.changes, CHANGE_ROW_NAMES.split(', ')), comparedRows(projected, table, t.changes, CHANGE_ROW_NAMES.split(', '))]
      const [row] = await loadDb.query<{ only_loaded: unknown; only_projected: unknown; n: unknown }>(
        `select (select count(*) from (${ours} except all ${theirs}) x) as only_loaded,
                (select count(*) from (${theirs} except all ${ours}) x) as only_projected,
                (select count(*) from ${loaded}.${table}) as n`,
      )
      const [onlyLoaded, onlyProjected] = [toNumber(row!.only_loaded), toNumber(row!.only_projected)]
      if (onlyLoaded + onlyProjected > 0) differences.push(`${table}: ${onlyLoaded} rows only loaded, ${onlyProjected} only projected`)
      if (key) counts[key] = toNumber(row!.n)
    }
    if (differences.length > 0) throw new Error(`the loader does not write what the projection writes: ${differences.join('; ')}`)
    return { ...counts, events }
  } finally {
    await loadDb.exec(`drop schema if exists ${loaded} cascade; drop schema if exists ${projected} cascade`)
    await Promise.all([loadDb.close(), eventDb.close()])
  }
}
