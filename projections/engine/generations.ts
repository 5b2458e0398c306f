import type { Sql } from '../../src/db/port.ts'
import { toIso, toNumber } from '../../src/db/port.ts'
import type { Projection, Tables } from './projection.ts'

/**
 * Generations: a projection's read model lives in the tables of one generation (its code version
 * and a build number). `mirador_generations` is the registry, one row per generation, holding its
 * state and its checkpoint (the position of the last event applied to its tables, committed in the
 * same transaction as its rows):
 *
 *   building ──(caught up)──► live ──(another promoted)──► previous ──(another promoted)──► retired
 *        └──(--hold)──► held ──(promote)──┘        ▲                 │
 *                                                  └──(rollback)─────┘
 *
 * Exactly one generation per projection is live (a unique index says so); readers use its tables.
 * `projections prune` drops every other generation except a build in progress.
 */

export type GenerationState = 'building' | 'held' | 'live' | 'previous' | 'retired'

export type GenerationRow = {
  projection: string
  version: number
  build: number
  state: GenerationState
  /** A build that stops at `held` instead of going live when caught up. */
  hold: boolean
  position: number
  createdAt: string
  updatedAt: string
  builtAt: string | null
  liveSince: string | null
  liveUntil: string | null
  lastError: string | null
  lastErrorAt: string | null
}

/** The name people and the status table use for a generation: `v2.1` (version 2, build 1). */
export const generationId = (g: { version: number; build: number }) => `v${g.version}.${g.build}`

/**
 * Table names of a generation: `<base>_v<version>` for the first build of a version (the names
 * tables had before generations existed), `<base>_v<version>_b<build>` for later ones.
 */
export function generationTables<K extends string>(projection: Projection<K>, g: { version: number; build: number }): Tables<K> {
  const suffix = g.build === 1 ? `v${g.version}` : `v${g.version}_b${g.build}`
  const out = {} as Record<K, string>
  for (const key of Object.keys(projection.tables) as K[]) out[key] = `${projection.tables[key]}_${suffix}`
  return out
}

/** Channel on which registry changes (promotion, rollback, prune, a new build) are announced. */
export const GENERATIONS_CHANNEL = 'mirador_generations'

export const REGISTRY_DDL = [
  `create table if not exists mirador_generations (
    projection text not null,
    version integer not null,
    build integer not null,
    state text not null check (state in ('building', 'held', 'live', 'previous', 'retired')),
    hold boolean not null default false,
    position bigint not null default 0,
    created_at timestamptz not null default clock_timestamp(),
    updated_at timestamptz not null default clock_timestamp(),
    built_at timestamptz,
    live_since timestamptz,
    live_until timestamptz,
    last_error text,
    last_error_at timestamptz,
    primary key (projection, version, build)
  )`,
  `create unique index if not exists mirador_generations_one_live on mirador_generations (projection) where state = 'live'`,
  // One build per projection at a time: a lease, renewed while the build runs (see build-lock.ts).
  `create table if not exists mirador_build_locks (
    projection text primary key,
    token text not null,
    generation text not null,
    pid integer not null,
    host text not null,
    started_at timestamptz not null,
    heartbeat_at timestamptz not null
  )`,
]

const COLUMNS = `projection, version, build, state, hold, position, created_at, updated_at, built_at, live_since, live_until,
  last_error, last_error_at`

const isoOrNull = (value: unknown) => (value === null || value === undefined ? null : toIso(value))

const toRow = (r: Record<string, unknown>): GenerationRow => ({
  projection: String(r.projection),
  version: toNumber(r.version),
  build: toNumber(r.build),
  state: r.state as GenerationState,
  hold: Boolean(r.hold),
  position: toNumber(r.position),
  createdAt: toIso(r.created_at),
  updatedAt: toIso(r.updated_at),
  builtAt: isoOrNull(r.built_at),
  liveSince: isoOrNull(r.live_since),
  liveUntil: isoOrNull(r.live_until),
  lastError: r.last_error === null || r.last_error === undefined ? null : String(r.last_error),
  lastErrorAt: isoOrNull(r.last_error_at),
})

/** Every generation of the given projections (all when omitted), oldest first. */
export async function listGenerations(sql: Sql, projections?: readonly string[]): Promise<GenerationRow[]> {
  const rows = projections
    ? await sql.query(
        `select ${COLUMNS} from mirador_generations
          where projection in (select jsonb_array_elements_text($1::text::jsonb)) order by projection, version, build`,
        [JSON.stringify(projections)],
      )
    : await sql.query(`select ${COLUMNS} from mirador_generations order by projection, version, build`)
  return rows.map(toRow)
}

/** The generations of one projection, locked until the end of the transaction `tx` (in a stable order). */
export async function lockGenerations(tx: Sql, projection: string): Promise<GenerationRow[]> {
  const rows = await tx.query(
    `select ${COLUMNS} from mirador_generations where projection = $1 order by version, build for update`,
    [projection],
  )
  return rows.map(toRow)
}

/** Registers a new generation (the next build number of the code's version); its tables are the caller's job. */
export async function registerGeneration(
  tx: Sql,
  projection: Projection,
  state: 'building' | 'live',
  hold = false,
): Promise<GenerationRow> {
  const [row] = await tx.query(
    `insert into mirador_generations (projection, version, build, state, hold, live_since, built_at)
     select $1, $2, coalesce(max(build), 0) + 1, $3, $4,
            case when $3 = 'live' then clock_timestamp() end, case when $3 = 'live' then clock_timestamp() end
       from mirador_generations where projection = $1 and version = $2
     returning ${COLUMNS}`,
    [projection.name, projection.version, state, hold],
  )
  return toRow(row!)
}

/**
 * Stores built before generations existed kept one checkpoint per projection version in
 * `mirador_checkpoints` (`listings_v1`) and tables named `<base>_v1`: exactly build 1 of that
 * version. Each becomes the live generation; the old table goes once nothing is left in it (a runner
 * of some projections only adopts its own).
 */
export async function adoptLegacyCheckpoints(tx: Sql, projections: readonly Projection[]): Promise<void> {
  const [legacy] = await tx.query<{ present: boolean }>(`select to_regclass('mirador_checkpoints') is not null as present`)
  if (!legacy?.present) return
  const rows = await tx.query<{ projection: string; position: unknown }>('select projection, position from mirador_checkpoints')
  for (const row of rows) {
    const match = /^(.+)_v([0-9]+)$/.exec(row.projection)
    const projection = match && projections.find((p) => p.name === match[1])
    if (!projection) continue
    await tx.query(
      `insert into mirador_generations (projection, version, build, state, position, built_at, live_since)
       select $1, $2, 1, 'live', $3, clock_timestamp(), clock_timestamp()
        where not exists (select 1 from mirador_generations where projection = $1)`,
      [projection.name, Number(match[2]), toNumber(row.position)],
    )
    await tx.query('delete from mirador_checkpoints where projection = $1', [row.projection])
  }
  const [left] = await tx.query<{ n: unknown }>('select count(*) as n from mirador_checkpoints')
  if (toNumber(left?.n ?? 0) === 0) await tx.query('drop table mirador_checkpoints')
}

export const announce = (tx: Sql, projection: string) => tx.query('select pg_notify($1, $2)', [GENERATIONS_CHANNEL, projection])
