import { randomUUID } from 'node:crypto'
import type { Row, Sql } from '../db/port.ts'
import { toNumber } from '../db/port.ts'
import { CHAIN_STARTED, CHAIN_STREAM, type ChainEntry, GENESIS, hexOf, linkOf, type VouchedRange } from './chain.ts'
import { categoryOf } from './port.ts'

/*
 * The hash chain on the SQL stores (docs/decisions/0115-tamper-evident-log.md): each row's `chain`
 * is sha256(previous row's chain ‖ sha256(content)), computed by the insert itself under the append
 * lock. The content is built by SQL from the stored columns as text, jsonb's own canonical text for
 * data and metadata, so that verifying asks SQL for each row's digest and parses no JSON.
 */

/**
 * Added to the schema, one statement each: the column, and the running link as an aggregate, used as
 * a window function over the rows one insert writes (its first argument, the link before them,
 * starts the fold). The step is PL/pgSQL: a LANGUAGE sql step is planned again at every statement
 * that calls it, which cost a single-event append on PGlite about a third more.
 */
export const CHAIN_SCHEMA: readonly string[] = [
  'alter table mirador_events add column if not exists chain bytea',
  `create or replace function mirador_chain_step(bytea, bytea, bytea) returns bytea language plpgsql immutable
     as $$ begin return sha256(coalesce($1, $2) || $3); end $$`,
  'create or replace aggregate mirador_chain(bytea, bytea) (sfunc = mirador_chain_step, stype = bytea)',
]

/**
 * The content digest of a row (columns prefixed by `r`): everything recorded of the event but its
 * category (derived from its stream), as one text. The stream and the type are length-prefixed and
 * data and metadata are jsonb's canonical text (a JSON object ends where its braces close), so two
 * different rows never give the same text. Plain concatenation: building a jsonb array of the
 * columns instead cost verification a third more (decision 0115).
 */
export const contentDigest = (r: string) =>
  `sha256(convert_to(${r}global_position || ' ' || ${r}event_id || ' ' || ${r}stream_revision || ' ' || ` +
  `to_char(${r}recorded_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') || ' ' || ` +
  `length(${r}stream_name) || ':' || ${r}stream_name || ' ' || length(${r}event_type) || ':' || ${r}event_type || ' ' || ` +
  `${r}data::text || ${r}metadata::text, 'UTF8'))`

/** A row to insert: `n` orders them; position and time only when they are given (an import). */
export type ChainedRow = {
  n: number
  event_id: string
  stream_name: string
  stream_revision: number
  category: string
  event_type: string
  data: unknown
  metadata: unknown
  global_position?: number
  recorded_at?: string
}

/**
 * Inserts `rows` in their order, each linked to the one before it; the first to the log's last
 * event, or to `previous` when given (the upgrade), or to GENESIS in an empty log. Positions are
 * drawn from the sequence and times from the clock, as the columns' defaults would, unless `given`
 * (an import keeps the exported ones). Must run under the append lock.
 */
export async function insertChained(tx: Sql, rows: readonly ChainedRow[], given: boolean, previous: Uint8Array | null = null) {
  // The sequence looked up once (an initplan): pg_get_serial_sequence per row cost as much as the insert.
  const position = given ? 'r.global_position' : `nextval((select pg_get_serial_sequence('mirador_events', 'global_position')::regclass))`
  const time = given ? 'r.recorded_at' : 'clock_timestamp()'
  return tx.query<{ stream_name: string; global_position: unknown }>(
    // Materialised so that each row's position and time are drawn once, in order, and the link is
    // computed from exactly the values stored. The batch is parsed once, as jsonb: from json, every
    // row's data and metadata were parsed again into jsonb (PostgreSQL: about 20 µs per event more).
    `with head as (select chain from mirador_events order by global_position desc limit 1),
     x as materialized (
       select ${position} as global_position, r.event_id, r.stream_name, r.stream_revision, r.category, r.event_type,
              r.data, r.metadata, ${time} as recorded_at
         from jsonb_to_recordset($1::text::jsonb) as r(n integer, global_position bigint, event_id uuid, stream_name text,
           stream_revision bigint, category text, event_type text, data jsonb, metadata jsonb, recorded_at timestamptz)
        order by r.n
     )
     insert into mirador_events (global_position, event_id, stream_name, stream_revision, category, event_type, data, metadata, recorded_at, chain)
     overriding system value
     select x.global_position, x.event_id, x.stream_name, x.stream_revision, x.category, x.event_type, x.data, x.metadata, x.recorded_at,
            mirador_chain(coalesce($2::bytea, (select chain from head), $3::bytea), ${contentDigest('x.')}) over (order by x.global_position)
       from x
      order by x.global_position
     returning stream_name, global_position`,
    [JSON.stringify(rows), previous, GENESIS],
  )
}

type ChainRow = Row & { global_position: unknown; stream_name: string; stream_revision: unknown; event_type: string; digest: Uint8Array; chain: Uint8Array | null }

/** The log after `after`, up to `limit` events, as the verification reads it: digests computed by SQL, links as stored. */
export async function readChain(sql: Sql, after: number, limit: number): Promise<ChainEntry[]> {
  const rows = await sql.query<ChainRow>(
    `select global_position, stream_name, stream_revision, event_type, ${contentDigest('')} as digest, chain
       from mirador_events where global_position > $1 order by global_position limit $2`,
    [after, limit],
  )
  return rows.map((row) => ({
    position: toNumber(row.global_position),
    stream: row.stream_name,
    revision: toNumber(row.stream_revision),
    type: row.event_type,
    digest: row.digest,
    link: row.chain,
  }))
}

/**
 * EventStore.vouchChain on the SQL stores: SQL checks each event of the range against the link
 * stored with the event before it (`lag`, reaching one row before the range; GENESIS before the
 * first) and sends back one row, so a whole log is verified without moving its rows; ranges are
 * independent, so several can be checked at once. A link is null or wrong: the range is not vouched
 * for. By induction over the ranges, a log whose every range is vouched for is the chain `ChainWalk`
 * recomputes from GENESIS, link for link.
 */
export async function vouchChain(sql: Sql, after: number, through: number): Promise<VouchedRange | null> {
  const [range] = await sql.query<{ counted: unknown; last: unknown; linked: boolean | null; link: Uint8Array | null }>(
    `with page as (
       select e.*, lag(e.chain, 1, $3::bytea) over (order by e.global_position) as previous
         from mirador_events e
        where e.global_position >= (select coalesce(max(global_position), 0) from mirador_events where global_position <= $1)
          and e.global_position <= $2
     ), checked as (
       select count(*) as counted, max(global_position) as last,
              bool_and(coalesce(chain = sha256(previous || ${contentDigest('')}), false)) as linked
         from page where global_position > $1
     )
     select counted, last, linked, (select chain from mirador_events where global_position = checked.last) as link from checked`,
    [after, through, GENESIS],
  )
  const events = toNumber(range!.counted)
  if (events === 0) return { events, last: null }
  if (!range!.linked || !range!.link) return null
  return { events, last: { position: toNumber(range!.last), link: range!.link } }
}

/** Events folded per read by the upgrade. */
const UPGRADE_PAGE = 10_000

/**
 * Starts the chain on a store that holds events recorded without one (main before decision 0115),
 * once, under the append lock: nothing recorded is rewritten; one `LogChainStarted` event is
 * recorded on its own stream, chained on the fold of every event before it (the link the last of
 * them would carry), with that digest and the position it covers in its data. A store whose chain
 * has started is left alone: an event written later without a link is for `audit verify` to report.
 */
export async function startChain(tx: Sql): Promise<void> {
  const [head] = await tx.query<{ chain: Uint8Array | null }>('select chain from mirador_events order by global_position desc limit 1')
  if (!head || head.chain !== null) return
  if ((await tx.query('select 1 from mirador_events where chain is not null limit 1')).length > 0) return
  let previous = GENESIS
  let through = 0
  let events = 0
  for (let page = await readChain(tx, 0, UPGRADE_PAGE); page.length > 0; page = await readChain(tx, through, UPGRADE_PAGE)) {
    for (const entry of page) previous = linkOf(previous, entry.digest)
    through = page.at(-1)!.position
    events += page.length
  }
  const row: ChainedRow = {
    n: 0,
    event_id: randomUUID(),
    stream_name: CHAIN_STREAM,
    stream_revision: 0,
    category: categoryOf(CHAIN_STREAM),
    event_type: CHAIN_STARTED,
    data: { through, events, digest: hexOf(previous) },
    metadata: {},
  }
  await insertChained(tx, [row], false, previous)
}
