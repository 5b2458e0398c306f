import { AppError } from '../shared/errors.ts'

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
  /** Called when the handler throws; the batch is retried after a short pause. */
  onError?: (error: unknown) => void
}

export interface EventStore {
  append(stream: string, events: readonly NewEvent[], expected: ExpectedRevision): Promise<AppendResult>
  /**
   * Appends to several streams (each at most once) atomically: either every write is recorded, or
   * none is. Each write is checked like `append`, in order: a write whose event ids were all
   * recorded before in its stream is a duplicate (nothing written for it, its expected revision not
   * checked); partly recorded ids raise IdempotencyConflict, a failed expected revision
   * WrongExpectedRevision, naming the first write at fault. Results come in the order of the writes.
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
   * (each must be above the head) and record a call all or nothing; KurrentDB assigns its own
   * positions and may leave a prefix of a failed call recorded, which a re-run of the import finds.
   */
  importEvents(events: readonly RecordedEvent[]): Promise<void>
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
 */
export class EventStoreUnavailable extends AppError {
  constructor(reason: string) {
    super('service_unavailable', `the event store is unavailable (${reason}); retry in a moment`, {}, { 'Retry-After': '5' })
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

export const categoryOf = (stream: string): string => {
  const dash = stream.indexOf('-')
  return dash < 0 ? stream : stream.slice(0, dash)
}
