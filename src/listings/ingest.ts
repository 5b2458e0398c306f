import { Buffer } from 'node:buffer'
import { stateOf } from '../eventstore/command-handler.ts'
import { type EventStore, IdempotencyConflict, type RecordedEvent, type StreamWrite, WrongExpectedRevision } from '../eventstore/port.ts'
import type { FxTable } from '../domain/market/fx.ts'
import type { FieldError } from '../shared/errors.ts'
import { type FeedRecord, parseFeedLine } from '../domain/listings/feed.ts'
import { type Listing, listingDecider, type ListingEvent, listingEventId, listingStream } from '../domain/listings/listing.ts'

/** Per feed line: first sight of a listing, a change recorded, or nothing new. */
export type IngestCounts = { new: number; changed: number; unchanged: number }
export type Rejection = { line: number; reason: string; details: FieldError[] }
export type IngestSummary = IngestCounts & { read: number; rejected: number; rejections: Rejection[] }
export type IngestProgress = IngestCounts & { read: number; rejected: number; bytesRead?: number; totalBytes?: number }

export type IngestOptions = {
  fx: FxTable
  /** Time of the run: the `observed_at` of lines that have none. */
  now: Date
  /** Lines validated and stored per batch (default 500). */
  batchSize?: number
  /** The number in the file of the first line given (default 1): rejections name lines by it. */
  firstLine?: number
  onProgress?: (progress: IngestProgress) => void
  /** Every bad line, as soon as it is read. */
  onRejected?: (rejection: Rejection) => void
}

/** The summary keeps this many rejections; `rejected` counts them all. */
const KEPT_REJECTIONS = 100
const ATTEMPTS = 10
/** Listings read in one query and written in one `appendMany` (a few MB of events at most). */
const LISTINGS_PER_WRITE = 500

const zero = (): IngestCounts => ({ new: 0, changed: 0, unchanged: 0 })
const add = (into: IngestCounts, more: IngestCounts) => {
  into.new += more.new
  into.changed += more.changed
  into.unchanged += more.unchanged
}


/** A listing's feed lines (in their order) and what they add to its recorded history. */
type Observation = { lines: number; counts: IngestCounts; write: StreamWrite | null }

/** Applies one listing's feed lines in order to the state its history leads to: pure. */
function observe(stream: string, records: readonly FeedRecord[], history: readonly RecordedEvent[], fx: FxTable): Observation {
  const counts = zero()
  const events: ListingEvent[] = []
  let listing = stateOf(listingDecider, history)
  for (const record of records) {
    const decided = listingDecider.decide({ type: 'ObserveListing', record, fx }, listing)
    if (decided.length === 0) counts.unchanged += 1
    else if (listing.status === 'untracked') counts.new += 1
    else counts.changed += 1
    events.push(...decided)
    listing = decided.reduce(listingDecider.evolve, listing)
  }
  if (events.length === 0) return { lines: records.length, counts, write: null }
  const revision = history.at(-1)?.revision
  const first = revision === undefined ? 0 : revision + 1
  return {
    lines: records.length,
    counts,
    write: {
      stream,
      events: events.map((event, i) => ({ id: listingEventId(stream, first + i, event), type: event.type, data: event.data })),
      expected: revision ?? 'no_stream',
    },
  }
}

/**
 * Records the observations in one `appendMany`, expecting the revisions they were decided on. A write
 * found recorded already is someone else's (a concurrent run decided the same), unless `ours` says
 * it is this run's own, recorded by an earlier call that failed on another listing.
 */
async function record(store: EventStore, observations: readonly Observation[], ours = false): Promise<IngestCounts> {
  const writing = observations.filter((o) => o.write !== null)
  const results = await store.appendMany(writing.map((o) => o.write!))
  const total = zero()
  let written = 0
  for (const observation of observations) {
    const duplicate = observation.write !== null && results[written++]!.duplicate && !ours
    add(total, duplicate ? { new: 0, changed: 0, unchanged: observation.lines } : observation.counts)
  }
  return total
}

/**
 * A concurrent writer recorded events in the listing since it was read: the expected revision
 * fails, or (event ids being derived from stream, revision and content) it recorded part of the
 * same decision. Either way nothing was written and deciding again on a fresh read is right.
 */
const lostRace = (error: unknown) => error instanceof WrongExpectedRevision || error instanceof IdempotencyConflict

/**
 * One listing on its own: its decision `tried` first when there is one, then read, decide, append;
 * on a lost race read again and decide again.
 */
async function ingestListing(store: EventStore, stream: string, records: readonly FeedRecord[], fx: FxTable, tried?: Observation): Promise<IngestCounts> {
  for (let attempt = 1; ; attempt++) {
    try {
      if (tried && attempt === 1) return await record(store, [tried], true)
      return await record(store, [observe(stream, records, await store.readStream(stream), fx)])
    } catch (error) {
      if (!lostRace(error) || attempt >= ATTEMPTS) throw error
    }
  }
}

/**
 * Many listings with one read and one `appendMany` (each listing is a decision of its own). If a
 * concurrent writer touched any of them, the call fails: each listing is then taken on its own. On a
 * store that records batches all or nothing, none was written and each is read again and decided
 * again; stream by stream, the others may have been written, so each listing's decision is tried
 * again as it was first (found recorded, it is this run's) before it is decided again.
 */
async function ingestBatch(store: EventStore, listings: readonly [string, FeedRecord[]][], fx: FxTable): Promise<IngestCounts> {
  const histories = await store.readStreams(listings.map(([stream]) => stream))
  const observations = listings.map(([stream, records]) => observe(stream, records, histories.get(stream)!, fx))
  try {
    return await record(store, observations)
  } catch (error) {
    if (!lostRace(error)) throw error
    const retried = store.batches === 'stream-by-stream'
    const total = zero()
    for (const [i, [stream, records]] of listings.entries()) add(total, await ingestListing(store, stream, records, fx, retried ? observations[i] : undefined))
    return total
  }
}

export type IngestRecordsOptions = {
  /**
   * Batches of listings in flight at the same time (default 1: the log then has the same order on
   * every run). Appends are serialised by the store; more lets one batch be read and decided while
   * another is written. A listing is always in one batch.
   */
  concurrency?: number
  /** After each batch of listings: feed lines done so far, of all the lines given. */
  onProgress?: (linesDone: number, linesTotal: number) => void
}

/**
 * Records what the feed lines tell, listing by listing (lines of one listing in their order), in
 * batches of listings, each read in one query and written in one `appendMany` (all or nothing where
 * the store allows it, else stream by stream: each listing is a decision of its own). Identical
 * lines and lines older than what is recorded change nothing, so re-running is a no-op.
 */
export async function ingestRecords(
  store: EventStore,
  records: readonly FeedRecord[],
  fx: FxTable,
  options: IngestRecordsOptions = {},
): Promise<IngestCounts> {
  const byStream = new Map<string, FeedRecord[]>()
  for (const record of records) {
    const stream = listingStream(record.source, record.source_id)
    const list = byStream.get(stream)
    if (list) list.push(record)
    else byStream.set(stream, [record])
  }
  const listings = [...byStream]
  const batches = Array.from({ length: Math.ceil(listings.length / LISTINGS_PER_WRITE) }, (_, i) =>
    listings.slice(i * LISTINGS_PER_WRITE, (i + 1) * LISTINGS_PER_WRITE),
  )
  const total = zero()
  let next = 0
  let linesDone = 0
  const worker = async () => {
    while (next < batches.length) {
      const batch = batches[next++]!
      add(total, await ingestBatch(store, batch, fx))
      linesDone += batch.reduce((n, [, lines]) => n + lines.length, 0)
      options.onProgress?.(linesDone, records.length)
    }
  }
  await Promise.all(Array.from({ length: Math.max(1, Math.min(options.concurrency ?? 1, batches.length)) }, worker))
  return total
}

/**
 * Validates and ingests NDJSON lines in batches. Bad lines are reported (their number in the file,
 * counted from `firstLine`, and reason) and nothing of them is stored; blank lines are skipped. With
 * `totalBytes` (the size of the file the lines come from) progress also reports bytes.
 */
export async function ingestLines(
  store: EventStore,
  lines: AsyncIterable<string> | Iterable<string>,
  options: IngestOptions,
  totalBytes?: number,
): Promise<IngestSummary> {
  const batchSize = options.batchSize ?? 500
  const summary: IngestSummary = { read: 0, ...zero(), rejected: 0, rejections: [] }
  let bytesRead = 0
  let lineNo = (options.firstLine ?? 1) - 1
  let batch: FeedRecord[] = []
  const progress = () =>
    options.onProgress?.({
      read: summary.read,
      new: summary.new,
      changed: summary.changed,
      unchanged: summary.unchanged,
      rejected: summary.rejected,
      ...(totalBytes === undefined ? {} : { bytesRead, totalBytes }),
    })
  const flush = async () => {
    if (batch.length > 0) add(summary, await ingestRecords(store, batch, options.fx))
    batch = []
    progress()
  }
  for await (const raw of lines) {
    lineNo += 1
    bytesRead += Buffer.byteLength(raw) + 1
    // Editors on Windows start UTF-8 files with a byte order mark.
    const line = lineNo === 1 ? raw.replace(/^\uFEFF/, '') : raw
    if (line.trim() === '') continue
    summary.read += 1
    const parsed = parseFeedLine(line, lineNo, options.now)
    if (parsed.ok) {
      batch.push(parsed.record)
      if (batch.length >= batchSize) await flush()
      continue
    }
    const rejection = { line: parsed.line, reason: parsed.reason, details: parsed.details }
    summary.rejected += 1
    if (summary.rejections.length < KEPT_REJECTIONS) summary.rejections.push(rejection)
    options.onRejected?.(rejection)
  }
  bytesRead = totalBytes ?? bytesRead
  await flush()
  return summary
}
