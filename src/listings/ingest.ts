import { Buffer } from 'node:buffer'
import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import { createInterface } from 'node:readline'
import { type Aggregate, loadAggregate } from '../eventstore/command-handler.ts'
import { type EventStore, WrongExpectedRevision } from '../eventstore/port.ts'
import type { FxTable } from '../market/fx.ts'
import type { FieldError } from '../shared/errors.ts'
import { type FeedRecord, parseFeedLine } from './feed.ts'
import {
  decideListing,
  evolveListing,
  isListingEvent,
  type Listing,
  type ListingEvent,
  listingEventId,
  listingStream,
  untracked,
} from './listing.ts'

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
  /** Listings written at the same time (default 1). */
  concurrency?: number
  onProgress?: (progress: IngestProgress) => void
  /** Every bad line, as soon as it is read. */
  onRejected?: (rejection: Rejection) => void
}

/** The summary keeps this many rejections; `rejected` counts them all. */
const KEPT_REJECTIONS = 100
const ATTEMPTS = 10

const zero = (): IngestCounts => ({ new: 0, changed: 0, unchanged: 0 })
const add = (into: IngestCounts, more: IngestCounts) => {
  into.new += more.new
  into.changed += more.changed
  into.unchanged += more.unchanged
}

const listingAggregate: Aggregate<Listing, ListingEvent> = { initial: untracked, evolve: evolveListing, is: isListingEvent }

/**
 * Applies one listing's feed lines in order and appends what changed in one append, expecting the
 * revision it loaded. A concurrent writer makes the append fail; then it reloads and decides again.
 */
async function ingestListing(store: EventStore, stream: string, records: readonly FeedRecord[], fx: FxTable): Promise<IngestCounts> {
  for (let attempt = 1; ; attempt++) {
    const { state: loaded, revision } = await loadAggregate(store, stream, listingAggregate)
    const counts = zero()
    const events: ListingEvent[] = []
    let listing = loaded
    for (const record of records) {
      const decided = decideListing({ type: 'ObserveListing', record, fx }, listing)
      if (decided.length === 0) counts.unchanged += 1
      else if (listing.status === 'untracked') counts.new += 1
      else counts.changed += 1
      events.push(...decided)
      listing = decided.reduce(evolveListing, listing)
    }
    if (events.length === 0) return counts
    const first = revision === 'no_stream' ? 0 : revision + 1
    try {
      const { duplicate } = await store.append(
        stream,
        events.map((event, i) => ({ id: listingEventId(stream, first + i, event), type: event.type, data: event.data })),
        revision,
      )
      // The same events were recorded already (a concurrent run decided the same): nothing new here.
      return duplicate ? { new: 0, changed: 0, unchanged: records.length } : counts
    } catch (error) {
      if (!(error instanceof WrongExpectedRevision) || attempt >= ATTEMPTS) throw error
    }
  }
}

export type IngestRecordsOptions = {
  /**
   * Listings written at the same time (default 1: the log then has the same order on every run).
   * Appends to one listing are always sequential.
   */
  concurrency?: number
  /** After each listing: feed lines done so far, of all the lines given. */
  onProgress?: (linesDone: number, linesTotal: number) => void
}

/**
 * Records what the feed lines tell, listing by listing (lines of one listing in their order).
 * Identical lines and lines older than what is recorded change nothing, so re-running is a no-op.
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
  const work = [...byStream]
  const total = zero()
  let next = 0
  let linesDone = 0
  const worker = async () => {
    while (next < work.length) {
      const [stream, lines] = work[next++]!
      add(total, await ingestListing(store, stream, lines, fx))
      linesDone += lines.length
      options.onProgress?.(linesDone, records.length)
    }
  }
  const workers = Math.max(1, Math.min(options.concurrency ?? 1, work.length))
  await Promise.all(Array.from({ length: workers }, worker))
  return total
}

/**
 * Validates and ingests NDJSON lines in batches. Bad lines are reported (line number and reason)
 * and nothing of them is stored; blank lines are skipped. With `totalBytes` (the size of the file
 * the lines come from) progress also reports bytes.
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
  let lineNo = 0
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
    if (batch.length > 0) add(summary, await ingestRecords(store, batch, options.fx, { concurrency: options.concurrency }))
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

/** `ingest FILE.ndjson`: the file read line by line (constant memory), progress in bytes. */
export async function ingestFile(store: EventStore, path: string, options: IngestOptions): Promise<IngestSummary> {
  const { size } = await stat(path)
  const input = createReadStream(path, { encoding: 'utf8' })
  const lines = createInterface({ input, crlfDelay: Infinity })
  try {
    return await ingestLines(store, lines, options, size)
  } finally {
    lines.close()
    input.destroy()
  }
}
