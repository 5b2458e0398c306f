/**
 * The pure half of the KurrentDB adapter: how the port's streams, revisions, positions, events and
 * errors map onto KurrentDB's, with no connection. `esdb-event-store.ts` and its parts do the talking.
 */
import {
  type AppendStreamState,
  type CurrentStreamState,
  CancelledError,
  convertToCommandError,
  DeadlineExceededError,
  type JSONEventData,
  NO_STREAM,
  type Position,
  type ReadPosition,
  START,
  StreamNotFoundError,
  TimeoutError,
  UnavailableError,
  UnsupportedError,
  WrongExpectedVersionError,
  type RecordedEvent as KurrentRecordedEvent,
} from '@kurrent/kurrentdb-client'
import { type ChainEntry, eventDigest, hexOf, linksAfter, streamLink } from './chain.ts'
import type { AppendResult, BatchGuarantee, ExpectedRevision, NewEvent, RecordedEvent, StreamWrite } from './port.ts'
import { categoryOf, checkExpected, EventStoreUnavailable, IdempotencyConflict, WrongExpectedRevision } from './port.ts'

/** The first KurrentDB whose multi-stream appends keep a batch of streams all or nothing. */
export const MULTI_STREAM_APPEND_SINCE = '25.1'
/** The first EventStoreDB that gives events read from a stream their `$all` position (see positionOf). */
export const OLDEST_SERVER = '22.6'

/** A mapping that cannot be made faithfully: the adapter stops rather than guess. */
export class EsdbMappingError extends Error {
  override name = 'EsdbMappingError'
}

// ---- positions ----------------------------------------------------------------------------

/**
 * KurrentDB addresses an event in `$all` by (commit, prepare). Every append made through the gRPC
 * API (single or multi-stream) writes its events as self-committed prepares, whose commit position
 * is their own prepare position; only the legacy TCP API's explicit transactions make them differ.
 * So the commit position alone is the port's position, and anything else is refused loudly.
 */
export function positionOf(position: Position | undefined, where: string): number {
  if (!position) throw new EsdbMappingError(`${where} has no $all position (KurrentDB 22.6 or later reports one)`)
  const { commit, prepare } = position
  if (commit !== prepare) {
    throw new EsdbMappingError(
      `${where} has commit position ${commit} but prepare position ${prepare}: it was written in an explicit ` +
        '(legacy TCP) transaction, which a single-number position cannot address',
    )
  }
  if (commit < 0n || commit > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new EsdbMappingError(`${where} has commit position ${commit}, beyond what a position can hold exactly`)
  }
  return Number(commit)
}

/** Where a read or subscription continues after port position `after` (0: the beginning). */
export const readPositionAfter = (after: number): ReadPosition =>
  after === 0 ? START : { commit: BigInt(after), prepare: BigInt(after) }

// ---- revisions ----------------------------------------------------------------------------

/** The exact KurrentDB stream state for a stream whose last revision is `current` (null: none). */
export const streamStateFor = (current: number | null): AppendStreamState => (current === null ? NO_STREAM : BigInt(current))

const portExpected = (state: AppendStreamState): ExpectedRevision =>
  typeof state === 'bigint' ? Number(state) : state

const portActual = (state: CurrentStreamState): number | 'no_stream' => (typeof state === 'bigint' ? Number(state) : 'no_stream')

// ---- events -------------------------------------------------------------------------------

/**
 * Record properties the adapter writes. Multi-stream appends carry metadata as string properties,
 * so the port's JSON metadata travels as one JSON text; KurrentDB reports properties back as the
 * event's metadata object, beside its own `$schema.*` keys.
 */
export const PROPERTY = {
  metadata: 'mirador.metadata',
  /** The original recording time of an imported event (KurrentDB stamps its own time). */
  recordedAt: 'mirador.recordedAt',
  /** Marks the first event of a write with the attempt that sent it, to tell a write from a retry's echo. */
  attempt: 'mirador.attempt',
  /** The event's link in its stream's hash chain, hex (src/eventstore/chain.ts, decision 0115). */
  chain: 'mirador.chain',
} as const

export type WriteExtras = { recordedAt?: string; attempt?: string; chain?: Uint8Array }

export function toEventData(event: NewEvent, extras: WriteExtras = {}): JSONEventData {
  const properties: Record<string, string> = {}
  if (event.metadata && Object.keys(event.metadata).length > 0) properties[PROPERTY.metadata] = JSON.stringify(event.metadata)
  if (extras.recordedAt) properties[PROPERTY.recordedAt] = extras.recordedAt
  if (extras.attempt) properties[PROPERTY.attempt] = extras.attempt
  if (extras.chain) properties[PROPERTY.chain] = hexOf(extras.chain)
  return {
    id: event.id,
    contentType: 'application/json',
    type: event.type,
    data: event.data,
    metadata: Object.keys(properties).length > 0 ? properties : undefined,
  }
}

/** Streams and event types starting with `$` are KurrentDB's own (settings, stats, projections' links…). */
export const isSystemEvent = (event: { streamId: string; type: string }) => event.streamId.startsWith('$') || event.type.startsWith('$')

const propertiesOf = (event: KurrentRecordedEvent): Record<string, unknown> =>
  event.metadata && typeof event.metadata === 'object' && !(event.metadata instanceof Uint8Array) && !Array.isArray(event.metadata)
    ? (event.metadata as Record<string, unknown>)
    : {}

function parseObject(text: unknown, where: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(String(text))
    if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>
  } catch {
    // reported below
  }
  throw new EsdbMappingError(`${where}: ${PROPERTY.metadata} is not a JSON object`)
}

/** A KurrentDB event as the port's RecordedEvent. Only JSON objects are data in this system. */
export function fromKurrent(event: KurrentRecordedEvent): RecordedEvent {
  const where = `event ${event.id} (${event.streamId}@${event.revision})`
  if (!event.isJson || !event.data || typeof event.data !== 'object' || Array.isArray(event.data)) {
    throw new EsdbMappingError(`${where} does not hold a JSON object`)
  }
  const properties = propertiesOf(event)
  const recordedAt = properties[PROPERTY.recordedAt]
  return {
    id: event.id,
    stream: event.streamId,
    revision: Number(event.revision),
    position: positionOf(event.position, where),
    type: event.type,
    data: event.data as Record<string, unknown>,
    metadata: properties[PROPERTY.metadata] === undefined ? {} : parseObject(properties[PROPERTY.metadata], where),
    recordedAt: typeof recordedAt === 'string' ? new Date(recordedAt).toISOString() : wholeSeconds(event.created),
  }
}

/**
 * KurrentDB's own recording time, to the second: the client's readers (its Rust bridge) drop the
 * milliseconds that its subscriptions keep, and one event must read the same on every path.
 */
const wholeSeconds = (created: Date) => new Date(Math.floor(created.getTime() / 1000) * 1000).toISOString()

export const attemptOf = (event: KurrentRecordedEvent): unknown => propertiesOf(event)[PROPERTY.attempt]

/** The chain link recorded with an event (null: none, or not 32 bytes of hex, which the verification reports as missing). */
function linkOfRaw(event: KurrentRecordedEvent): Uint8Array | null {
  const link = propertiesOf(event)[PROPERTY.chain]
  return typeof link === 'string' && /^[0-9a-f]{64}$/.test(link) ? Buffer.from(link, 'hex') : null
}

/** What the next event of a stream holding `events` links to (src/eventstore/chain.ts `streamLink`; the last link alone when it has one). */
export function nextLinkOf(events: readonly KurrentRecordedEvent[]): Uint8Array {
  const last = events.at(-1)
  return (last && linkOfRaw(last)) ?? streamLink(events.map(chainEntryOf))
}

/** The links of `events`, appended to `stream` after revision `current` (null: a new stream), chaining on `previous`. */
export function linksFor(stream: string, current: number | null, events: readonly NewEvent[], previous: Uint8Array): Uint8Array[] {
  const first = (current ?? -1) + 1
  return linksAfter(previous, events.map((e, i) => eventDigest({ ...e, stream, revision: first + i, metadata: e.metadata ?? {} })))
}

/** A KurrentDB event as the verification reads it: its content digest computed here, its recorded link. */
export function chainEntryOf(event: KurrentRecordedEvent): ChainEntry {
  const recorded = fromKurrent(event)
  return { position: recorded.position, stream: recorded.stream, revision: recorded.revision, type: recorded.type, digest: eventDigest(recorded), link: linkOfRaw(event) }
}

// ---- categories ---------------------------------------------------------------------------

/**
 * A server-side `$all` filter on stream-name prefixes for the given categories. A prefix also
 * matches longer names (`owner` matches `owners-1`), so `matches` keeps exactly the categories.
 */
export function categoryFilter(categories: readonly string[] | undefined): { prefixes: string[] | null; matches(stream: string): boolean } {
  if (!categories) return { prefixes: null, matches: () => true }
  const wanted = new Set(categories)
  return { prefixes: [...wanted], matches: (stream) => wanted.has(categoryOf(stream)) }
}

// ---- appends ------------------------------------------------------------------------------

export type WritePlan =
  | { kind: 'duplicate'; result: AppendResult }
  | { kind: 'append'; current: number | null }

/**
 * What to do with one write, given every event its stream holds: the port's rules, exactly as the
 * SQL adapter applies them. All of its ids recorded → a duplicate (its expected revision is not
 * checked); some → IdempotencyConflict; none → the expected revision must hold.
 */
export function planWrite(write: StreamWrite, recorded: readonly RecordedEvent[]): WritePlan {
  const ids = new Set(write.events.map((e) => e.id.toLowerCase()))
  const seen = recorded.filter((e) => ids.has(e.id.toLowerCase()))
  if (seen.length > 0) {
    if (seen.length !== write.events.length) throw new IdempotencyConflict(write.stream)
    return {
      kind: 'duplicate',
      result: {
        revision: Math.max(...seen.map((e) => e.revision)),
        position: Math.max(...seen.map((e) => e.position)),
        duplicate: true,
      },
    }
  }
  const current = recorded.at(-1)?.revision ?? null
  checkExpected(write.stream, write.expected, current)
  return { kind: 'append', current }
}

/** One atomic append of an import: several streams, each at most once (as KurrentDB requires). */
export type ImportRequest = { stream: string; current: number | null; events: RecordedEvent[] }

/**
 * Cuts exported events into appends that keep their global order: consecutive events of a stream
 * share a request, and a chunk ends before a stream would appear in it a second time (KurrentDB
 * compares stream names without case there).
 */
export function importChunks(events: readonly RecordedEvent[]): ImportRequest[][] {
  const chunks: ImportRequest[][] = []
  let chunk: ImportRequest[] = []
  for (const event of events) {
    const last = chunk.at(-1)
    if (last?.stream === event.stream) {
      last.events.push(event)
      continue
    }
    if (chunk.some((request) => request.stream.toLowerCase() === event.stream.toLowerCase())) {
      chunks.push(chunk)
      chunk = []
    }
    chunk.push({ stream: event.stream, current: event.revision === 0 ? null : event.revision - 1, events: [event] })
  }
  if (chunk.length > 0) chunks.push(chunk)
  return chunks
}

// ---- errors -------------------------------------------------------------------------------

/** The client's errors (or raw gRPC ones it passes on) as the port's: a lost race, an unreachable server, or unchanged. */
export function toPortError(raw: unknown): unknown {
  const error = raw instanceof Error ? convertToCommandError(raw) : raw
  if (error instanceof WrongExpectedVersionError) {
    return new WrongExpectedRevision(error.streamName, portExpected(error.expectedState), portActual(error.actualState))
  }
  if (error instanceof DeadlineExceededError) return new EventStoreUnavailable('KurrentDB did not answer before the deadline')
  if (error instanceof TimeoutError) return new EventStoreUnavailable('KurrentDB timed out committing the write')
  // gRPC ends the message with an empty "Resolution note: " once the name resolved: it says nothing.
  if (error instanceof UnavailableError)
    return new EventStoreUnavailable(`KurrentDB is unreachable: ${error.message.replace(/\s*Resolution note:\s*$/, '') || 'no connection'}`)
  if (error instanceof CancelledError) return new EventStoreUnavailable('the call to KurrentDB was cancelled')
  return raw
}

/** A read of a stream that was never written: the port reads it as empty. */
export const isStreamNotFound = (error: unknown): boolean => error instanceof StreamNotFoundError

// ---- the server ---------------------------------------------------------------------------

/** `24.10.0` → [24, 10]; null when the server reported no version (`unknown`) or an unreadable one. */
export function versionOf(reported: string): [number, number] | null {
  const match = /^(\d+)\.(\d+)/.exec(reported.trim())
  return match ? [Number(match[1]), Number(match[2])] : null
}

const atLeast = (version: [number, number], since: string) => {
  const [major, minor] = versionOf(since)!
  return version[0] > major || (version[0] === major && version[1] >= minor)
}

/**
 * Whether the server offers multi-stream appends, from the adapter's probe (an empty multi-stream
 * append) and the error it ended with (null: none). The client refuses before sending anything on a
 * server without them (UnsupportedError); any answer of the server, even a refusal of the empty
 * request, means it has them. An unreachable server is thrown as the port's error.
 */
export function multiStreamAppendOffered(probeError: unknown): boolean {
  if (probeError === null) return true
  if (probeError instanceof UnsupportedError) return false
  const mapped = toPortError(probeError)
  if (mapped instanceof EventStoreUnavailable) throw mapped
  return true
}

/** How the adapter works with a server, for `appendMany` and for the start-up log. */
export type ServerMode = {
  /** As the server reports it (`unknown` when it does not). */
  version: string
  batches: BatchGuarantee
  /** Why, in words, for the log. */
  reason: string
}

/**
 * The mode for a server that reports `version` and offers multi-stream appends or not: batches all
 * or nothing where it does (KurrentDB 25.1 and later) unless single-stream appends are asked for,
 * else stream by stream. A server older than OLDEST_SERVER is refused (events read from its streams
 * carry no `$all` position), and so is one that reports no version: the servers that do not
 * (EventStoreDB before 21.10, which lacks the features endpoint) are all older.
 */
export function serverMode(server: { version: string; multiStreamAppend: boolean }, singleStreamAppends: boolean): ServerMode {
  const version = versionOf(server.version)
  const needed = `Mirador needs EventStoreDB ${OLDEST_SERVER} or later (KurrentDB), whose stream reads give each event its $all position`
  if (!version) throw new EsdbMappingError(`the server reports no version (EventStoreDB before 21.10 does not): ${needed}`)
  if (!atLeast(version, OLDEST_SERVER)) throw new EsdbMappingError(`the server reports version ${server.version}: ${needed}`)
  if (!server.multiStreamAppend) {
    const why = atLeast(version, MULTI_STREAM_APPEND_SINCE)
      ? `KurrentDB ${server.version} does not offer multi-stream appends`
      : `no multi-stream appends before KurrentDB ${MULTI_STREAM_APPEND_SINCE}`
    return { version: server.version, batches: 'stream-by-stream', reason: `${why}: each stream of a batch is appended on its own` }
  }
  if (singleStreamAppends) {
    return { version: server.version, batches: 'stream-by-stream', reason: 'SINGLE_STREAM_APPENDS is on: each stream of a batch is appended on its own' }
  }
  return { version: server.version, batches: 'all-or-nothing', reason: 'multi-stream appends: a batch of streams is recorded all or nothing' }
}
