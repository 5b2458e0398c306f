import { DependencyUnavailable } from '../runtime/dependency.ts'
import type { ChainEntry, ChainRule, VouchedRange } from './chain.ts'

/**
 * The event store port. Streams are named `<category>-<id>` (e.g. `owner-acme`); revisions are
 * 0-based per stream; positions are global, start at 1 and only grow (consecutive in the SQL
 * adapters, byte offsets of the log in KurrentDB: compare them, never count with them).
 */
export type NewEvent = {
  /** A UUID chosen by the caller, so that a retried append is recognised and recorded once. */
  id: string
  type: string
  data: Record<string, unknown>
  metadata?: Record<string, unknown>
}

export type RecordedEvent = {
  id: string
  stream: string
  revision: number
  position: number
  type: string
  data: Record<string, unknown>
  metadata: Record<string, unknown>
  recordedAt: string
}

/** `no_stream`: the stream must not exist; a number: the revision of the stream's last event. */
export type ExpectedRevision = 'any' | 'no_stream' | 'stream_exists' | number

export type AppendResult = {
  /** Revision of the stream's last event after the append. */
  revision: number
  /** Global position of the last event appended. */
  position: number
  /** True when every event id was already recorded: a retry, nothing was written. */
  duplicate: boolean
}

/** One stream's part of an `appendMany`: the same three things `append` takes. */
export type StreamWrite = { stream: string; events: readonly NewEvent[]; expected: ExpectedRevision }

/**
 * What one `appendMany` call guarantees across its streams (a property of the store, see `batches`):
 *
 * - `all-or-nothing`: every write is recorded, or none is (PGlite, PostgreSQL, KurrentDB 25.1 and
 *   later, whose multi-stream appends are atomic).
 * - `stream-by-stream`: each write is recorded on its own, exactly as `append` would record it, and
 *   the writes may land in any order (EventStoreDB and KurrentDB before 25.1, which append to one
 *   stream at a time). When one fails, the call still tries the others and then throws the error
 *   of the first failed write: the others may be recorded. Calling again with the same writes is
 *   safe, since the recorded ones come back as duplicates.
 *
 * No rule of the system may depend on `all-or-nothing`: each decision is written to one stream, and
 * a batch only saves round trips where the store allows it.
 */
export type BatchGuarantee = 'all-or-nothing' | 'stream-by-stream'

export type ReadAllOptions = {
  limit?: number
  /** Only streams of these categories (the part of the stream name before the first '-'). */
  categories?: readonly string[]
}

export type Subscription = {
  /** Position of the last event handed to the handler. */
  readonly position: number
  stop(): Promise<void>
}

export type SubscribeOptions = ReadAllOptions & {
  /** Called when the store cannot be read or the handler throws; the read or the batch is retried after a short pause. */
  onError?: (error: unknown) => void
  /**
   * Called once the subscription works again after a failure it reported: it is caught up with
   * nothing left to hand over, or the handler took a batch. What showed the failure may clear it.
   */
  onRecovered?: () => void
}

export interface EventStore {
  /** What `appendMany` guarantees on this store (see BatchGuarantee). */
  readonly batches: BatchGuarantee
  append(stream: string, events: readonly NewEvent[], expected: ExpectedRevision): Promise<AppendResult>
  /**
   * Appends to several streams, each at most once, all or nothing or stream by stream as `batches`
   * says. Each write is checked like `append`: a write whose event ids were all recorded before in
   * its stream is a duplicate (nothing written for it, its expected revision not checked); partly
   * recorded ids raise IdempotencyConflict, a failed expected revision WrongExpectedRevision, naming
   * the first write at fault. A malformed call (a stream twice, an event id twice, a write without
   * events) is refused before anything is written. Results come in the order of the writes.
   */
  appendMany(writes: readonly StreamWrite[]): Promise<AppendResult[]>
  readStream(stream: string): Promise<RecordedEvent[]>
  /** Several streams in one read: every requested stream is a key (empty when missing), events in revision order. */
  readStreams(streams: readonly string[]): Promise<Map<string, RecordedEvent[]>>
  /** Events with position > `after`, in position order. */
  readAll(after: number, options?: ReadAllOptions): Promise<RecordedEvent[]>
  /** Catches up from `after`, then stays live; each event is handed over once, in order. */
  subscribe(
    after: number,
    handler: (events: RecordedEvent[]) => Promise<void>,
    options?: SubscribeOptions,
  ): Subscription
  /** Position of the newest event (0 when empty). */
  headPosition(): Promise<number>
  /**
   * Records events exported from a store (`events import`), in the order given, keeping their ids,
   * streams, revisions, types, data, metadata and recording times. Each event must be the next one
   * of its stream (else WrongExpectedRevision). The SQL adapters keep the exported positions too
   * (each must be above the head); KurrentDB assigns its own. The SQL adapters with `all-or-nothing`
   * batches record a call all or nothing; otherwise (KurrentDB, or stream by stream) a failed call
   * may leave a prefix recorded, which a re-run of the import finds.
   */
  importEvents(events: readonly RecordedEvent[]): Promise<void>
  /** How this store links each event to what came before it (src/eventstore/chain.ts, decision 0115). */
  readonly chain: ChainRule
  /** The events after `after`, up to `limit`, as `audit verify` checks them: content digests and recorded links, in position order. */
  readChain(after: number, limit: number): Promise<ChainEntry[]>
  /**
   * Whether every event after `after`, up to `through`, carries the link its content and the event
   * before it (as stored) give, checked by the store on its side so that no event is sent: the
   * range, or null when some event in it does not (`readChain` then names it). Stores with a global
   * chain that can check it (the SQL stores); absent, `audit verify` reads every event.
   */
  vouchChain?(after: number, through: number): Promise<VouchedRange | null>
  close(): Promise<void>
}

export class WrongExpectedRevision extends Error {
  constructor(
    readonly stream: string,
    readonly expected: ExpectedRevision,
    readonly actual: number | 'no_stream',
  ) {
    super(`stream ${stream}: expected revision ${expected}, actual ${actual}`)
    this.name = 'WrongExpectedRevision'
  }
}

/** Some but not all of the event ids were recorded before, or recorded in another stream. */
export class IdempotencyConflict extends Error {
  constructor(readonly stream: string) {
    super(`stream ${stream}: event ids were partly recorded before or belong to another stream`)
    this.name = 'IdempotencyConflict'
  }
}

/**
 * The store cannot be reached or did not answer in time. For an append the outcome is unknown:
 * retrying it with the same event ids is safe (a recorded append is recognised as a duplicate).
 * `reason` is for the log; the client is told only that the event store is unavailable.
 */
export class EventStoreUnavailable extends DependencyUnavailable {
  constructor(reason: string) {
    super('event store', reason)
    this.name = 'EventStoreUnavailable'
  }
}

/** Throws WrongExpectedRevision unless `expected` holds for a stream whose last revision is `current` (null: no stream). */
export function checkExpected(stream: string, expected: ExpectedRevision, current: number | null): void {
  const ok =
    expected === 'any' ||
    (expected === 'no_stream' && current === null) ||
    (expected === 'stream_exists' && current !== null) ||
    expected === current
  if (!ok) throw new WrongExpectedRevision(stream, expected, current ?? 'no_stream')
}

/** The checks `appendMany` makes before touching the store, so that a malformed call writes nothing. */
export function checkBatch(writes: readonly StreamWrite[]): void {
  const ids = new Set<string>()
  const streams = new Set<string>()
  for (const { stream, events } of writes) {
    if (events.length === 0) throw new Error(`append to ${stream} needs at least one event`)
    if (streams.has(stream)) throw new Error(`appendMany: stream ${stream} is written more than once`)
    streams.add(stream)
    for (const event of events) {
      const id = event.id.toLowerCase()
      if (ids.has(id)) throw new IdempotencyConflict(stream)
      ids.add(id)
    }
  }
}

/**
 * `appendMany` on a store whose batches are `stream-by-stream`: each write appended on its own by
 * `appendOne`, up to `concurrency` at a time; every write is tried, then the first failure (in the
 * order of the writes) is thrown.
 */
export async function appendStreamByStream(
  writes: readonly StreamWrite[],
  appendOne: (write: StreamWrite) => Promise<AppendResult>,
  concurrency: number,
): Promise<AppendResult[]> {
  checkBatch(writes)
  const outcomes: ({ ok: true; result: AppendResult } | { ok: false; error: unknown })[] = []
  let next = 0
  const worker = async () => {
    while (next < writes.length) {
      const w = next++
      try {
        outcomes[w] = { ok: true, result: await appendOne(writes[w]!) }
      } catch (error) {
        outcomes[w] = { ok: false, error }
      }
    }
  }
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, writes.length)) }, worker))
  const results: AppendResult[] = []
  for (const outcome of outcomes) {
    if (!outcome.ok) throw outcome.error
    results.push(outcome.result)
  }
  return results
}

export const categoryOf = (stream: string): string => {
  const dash = stream.indexOf('-')
  return dash < 0 ? stream : stream.slice(0, dash)
}
