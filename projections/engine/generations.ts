import type { Sql } from '../../src/db/port.ts'
import { toIso, toNumber } from '../../src/db/port.ts'
import type { Generation, GenerationRef, GenerationState, Transition } from './generation-states.ts'
import type { Projection, Tables } from './projection.ts'

/**
 * Generations: a projection's read model lives in the tables of one generation (its code version
 * and a build number). `mirador_generations` is the registry, one row per generation, holding its
 * state and its checkpoint (the position of the last event applied to its tables, committed in the
 * same transaction as its rows). Its states and what moves between them: generation-states.ts. This
 * module holds every statement on the registry, each a named transition or read.
 *
 * Exactly one generation per projection is live (a unique index says so); readers use its tables.
 */

export type GenerationRow = Generation & {
  projection: string
  createdAt: string
  updatedAt: string
  builtAt: string | null
  liveSince: string | null
  liveUntil: string | null
  lastError: string | null
  lastErrorAt: string | null
}

/**
 * Table names of a generation: `<base>_v<version>` for the first build of a version (the names
 * tables had before generations existed), `<base>_v<version>_b<build>` for later ones.
 */
export function generationTables<K extends string>(projection: Projection<K>, g: GenerationRef): Tables<K> {
  const suffix = g.build === 1 ? `v${g.version}` : `v${g.version}_b${g.build}`
  const out = {} as Record<K, string>
  for (const key of Object.keys(projection.tables) as K[]) out[key] = `${projection.tables[key]}_${suffix}`
  return out
}

/** Channel on which registry changes (promotion, rollback, prune, a new build) are announced. */
export const GENERATIONS_CHANNEL = 'mirador_generations'

const REGISTRY_DDL = [
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
/** The row of one generation: parameters $1, $2, $3. */
const ONE = 'where projection = $1 and version = $2 and build = $3'
const key = (projection: string, g: GenerationRef) => [projection, g.version, g.build]

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

// ---- reads ----------------------------------------------------------------------------------------

/** Whether the registry exists (a store no runner has prepared has none) and whether checkpoints from before generations are left. */
export async function registryPresence(sql: Sql): Promise<{ registry: boolean; legacy: boolean }> {
  const [present] = await sql.query<{ registry: boolean; legacy: boolean }>(
    `select to_regclass('mirador_generations') is not null as registry, to_regclass('mirador_checkpoints') is not null as legacy`,
  )
  return { registry: Boolean(present?.registry), legacy: Boolean(present?.legacy) }
}

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
  const rows = await tx.query(`select ${COLUMNS} from mirador_generations where projection = $1 order by version, build for update`, [projection])
  return rows.map(toRow)
}

/** The checkpoint and state of one generation, locked until the end of `tx` (null when it is gone): what a batch applies after. */
export async function lockCheckpoint(tx: Sql, projection: string, g: GenerationRef): Promise<{ position: number; state: GenerationState } | null> {
  const [row] = await tx.query<{ position: unknown; state: GenerationState }>(
    `select position, state from mirador_generations ${ONE} for update`,
    key(projection, g),
  )
  return row ? { position: toNumber(row.position), state: row.state } : null
}

/** A generation's checkpoint: the position of the last event its tables hold (0 when unknown). */
export async function checkpointOf(sql: Sql, projection: string, g: GenerationRef): Promise<number> {
  const [row] = await sql.query<{ position: unknown }>(`select position from mirador_generations ${ONE}`, key(projection, g))
  return row ? toNumber(row.position) : 0
}

/** The live generation of every projection, or null when the registry does not exist yet. */
export async function liveGenerations(sql: Sql): Promise<(GenerationRef & { projection: string })[] | null> {
  if (!(await registryPresence(sql)).registry) return null
  const rows = await sql.query<{ projection: string; version: unknown; build: unknown }>(
    `select projection, version, build from mirador_generations where state = 'live'`,
  )
  return rows.map((row) => ({ projection: row.projection, version: toNumber(row.version), build: toNumber(row.build) }))
}

// ---- transitions ----------------------------------------------------------------------------------

/** Creates the registry (and the build locks' table). */
export async function createRegistry(tx: Sql): Promise<void> {
  for (const ddl of REGISTRY_DDL) await tx.query(ddl)
}

/** Applies the transitions generation-states.ts decided, in order, and tells every process (NOTIFY) when there were any. */
export async function applyTransitions(tx: Sql, projection: string, transitions: readonly Transition[]): Promise<void> {
  for (const transition of transitions) {
    const { generation } = transition
    switch (transition.kind) {
      case 'register':
        await register(tx, projection, generation, transition.state, transition.hold)
        break
      case 'set hold':
        await tx.query(`update mirador_generations set hold = $4 ${ONE}`, [...key(projection, generation), transition.hold])
        break
      case 'hold':
        await tx.query(`update mirador_generations set state = 'held', built_at = clock_timestamp() ${ONE}`, key(projection, generation))
        break
      case 'make previous':
        await tx.query(`update mirador_generations set state = 'previous', live_until = clock_timestamp() ${ONE}`, key(projection, generation))
        break
      case 'make live':
        await tx.query(
          `update mirador_generations set state = 'live', hold = false, live_since = clock_timestamp(), live_until = null,
                  built_at = coalesce(built_at, clock_timestamp()) ${ONE}`,
          key(projection, generation),
        )
        break
      case 'retire':
        await tx.query(`update mirador_generations set state = 'retired' ${ONE}`, key(projection, generation))
        break
      default: {
        const never: never = transition
        throw new Error(`unhandled generation transition ${JSON.stringify(never)}`)
      }
    }
  }
  if (transitions.length > 0) await announce(tx, projection)
}

/** A new generation; its tables are the caller's job. */
async function register(tx: Sql, projection: string, g: GenerationRef, state: 'building' | 'live', hold: boolean): Promise<void> {
  const now = state === 'live' ? 'clock_timestamp()' : 'null'
  await tx.query(
    `insert into mirador_generations (projection, version, build, state, hold, live_since, built_at) values ($1, $2, $3, $4, $5, ${now}, ${now})`,
    [...key(projection, g), state, hold],
  )
}

/** Moves a generation's checkpoint to `position`, in the transaction that applied the events up to it; a success clears the last error. */
export async function advanceCheckpoint(tx: Sql, projection: string, g: GenerationRef, position: number): Promise<void> {
  await tx.query(
    `update mirador_generations set position = $4, updated_at = clock_timestamp(), last_error = null, last_error_at = null ${ONE}`,
    [...key(projection, g), position],
  )
}

/** A build starting over: back to position 0, in the transaction that emptied its tables. */
export async function resetBuild(tx: Sql, projection: string, g: GenerationRef): Promise<void> {
  await tx.query(`update mirador_generations set position = 0, updated_at = clock_timestamp() ${ONE}`, key(projection, g))
}

/** Records why applying events to a generation failed (status shows it; a failed build is retried later). */
export async function recordError(sql: Sql, projection: string, g: GenerationRef, message: string): Promise<void> {
  await sql.query(`update mirador_generations set last_error = $4, last_error_at = clock_timestamp() ${ONE}`, [
    ...key(projection, g),
    message.slice(0, 2000),
  ])
}

/** Clears the error recorded for a generation whose following works again (without events to apply, nothing else would). */
export async function clearError(sql: Sql, projection: string, g: GenerationRef): Promise<void> {
  await sql.query(`update mirador_generations set last_error = null, last_error_at = null ${ONE} and last_error is not null`, key(projection, g))
}

/** Removes a pruned generation from the registry, in the transaction that dropped its tables. */
export async function deleteGeneration(tx: Sql, projection: string, g: GenerationRef): Promise<void> {
  await tx.query(`delete from mirador_generations ${ONE}`, key(projection, g))
}

/**
 * Stores built before generations existed kept one checkpoint per projection version in
 * `mirador_checkpoints` (`listings_v1`) and tables named `<base>_v1`: exactly build 1 of that
 * version. Each becomes the live generation; the old table goes once nothing is left in it (a runner
 * of some projections only adopts its own).
 */
export async function adoptLegacyCheckpoints(tx: Sql, projections: readonly Projection[]): Promise<void> {
  if (!(await registryPresence(tx)).legacy) return
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

/** Whether checkpoints from before generations of any of `projections` are left to adopt. */
export async function legacyCheckpointsOf(sql: Sql, projections: readonly Projection[]): Promise<boolean> {
  if (!(await registryPresence(sql)).legacy) return false
  const legacy = await sql.query<{ projection: string }>('select projection from mirador_checkpoints')
  return legacy.some((r) => projections.some((p) => r.projection.startsWith(`${p.name}_v`)))
}

const announce = (tx: Sql, projection: string) => tx.query('select pg_notify($1, $2)', [GENERATIONS_CHANNEL, projection])
