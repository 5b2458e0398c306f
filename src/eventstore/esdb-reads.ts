import {
  BACKWARDS,
  END,
  type KurrentDBClient,
  type ReadPosition,
  type RecordedEvent as KurrentRecordedEvent,
  START,
  streamNameFilter,
} from '@kurrent/kurrentdb-client'
import type { ChainEntry } from './chain.ts'
import { categoryFilter, chainEntryOf, fromKurrent, isStreamNotFound, isSystemEvent, positionOf, readPositionAfter, toPortError } from './esdb-mapping.ts'
import type { ReadAllOptions, RecordedEvent } from './port.ts'

export const DEFAULT_BATCH = 1000
/** Streams read at once by `readStreams` (each is one gRPC call). */
const READ_CONCURRENCY = 32

/**
 * Events of one stream from a revision on (all when omitted), as KurrentDB returns them. Reads that
 * decide an append ask the leader: a follower's older state would only cost another round.
 */
export async function readRaw(
  client: KurrentDBClient,
  stream: string,
  from?: number,
  count?: number,
  requiresLeader = false,
): Promise<KurrentRecordedEvent[]> {
  const out: KurrentRecordedEvent[] = []
  try {
    const read = client.readStream(stream, {
      fromRevision: from === undefined ? START : BigInt(from),
      requiresLeader,
      ...(count === undefined ? {} : { maxCount: count }),
    })
    for await (const resolved of read) if (resolved.event) out.push(resolved.event)
  } catch (error) {
    if (isStreamNotFound(error)) return []
    throw toPortError(error)
  }
  return out
}

/** Several streams, READ_CONCURRENCY at a time, each with `read`. */
export async function readStreams(
  streams: readonly string[],
  read: (stream: string) => Promise<RecordedEvent[]>,
): Promise<Map<string, RecordedEvent[]>> {
  const unique = [...new Set(streams)]
  const byStream = new Map<string, RecordedEvent[]>()
  for (let i = 0; i < unique.length; i += READ_CONCURRENCY) {
    const slice = unique.slice(i, i + READ_CONCURRENCY)
    const events = await Promise.all(slice.map(read))
    slice.forEach((stream, j) => byStream.set(stream, events[j]!))
  }
  return byStream
}

/** `$all` from a position, the way the port reads it: exclusive, without system events, filtered exactly. */
export async function readAll(client: KurrentDBClient, after: number, options: ReadAllOptions = {}): Promise<RecordedEvent[]> {
  return (await readAllRaw(client, after, options)).map(fromKurrent)
}

/** EventStore.readChain on KurrentDB: `$all` as readAll reads it, each event's digest computed here. */
export async function readChain(client: KurrentDBClient, after: number, limit: number): Promise<ChainEntry[]> {
  return (await readAllRaw(client, after, { limit })).map(chainEntryOf)
}

async function readAllRaw(client: KurrentDBClient, after: number, options: ReadAllOptions): Promise<KurrentRecordedEvent[]> {
  const limit = options.limit ?? DEFAULT_BATCH
  const filter = categoryFilter(options.categories)
  const out: KurrentRecordedEvent[] = []
  for (let from = after; ; ) {
    // KurrentDB starts a read at the given position inclusively: ask for one more.
    const wanted = limit - out.length + 1
    let returned = 0
    try {
      const read = client.readAll({
        fromPosition: readPositionAfter(from),
        maxCount: wanted,
        ...(filter.prefixes ? { filter: streamNameFilter({ prefixes: filter.prefixes }) } : {}),
      })
      for await (const resolved of read) {
        returned += 1
        const event = resolved.event
        if (!event) continue
        const position = positionOf(event.position, `event ${event.id} in $all`)
        if (position <= from) continue
        from = position
        if (isSystemEvent(event) || !filter.matches(event.streamId)) continue
        out.push(event)
        if (out.length === limit) return out
      }
    } catch (error) {
      throw toPortError(error)
    }
    if (returned < wanted) return out
  }
}

/** The position of the newest event that is not KurrentDB's own (0 when none). */
export async function headPosition(client: KurrentDBClient): Promise<number> {
  for (let from: ReadPosition = END; ; ) {
    let returned = 0
    let oldest: bigint | null = null
    try {
      for await (const resolved of client.readAll({ direction: BACKWARDS, fromPosition: from, maxCount: 100 })) {
        returned += 1
        const event = resolved.event
        if (!event) continue
        const position = positionOf(event.position, `event ${event.id} in $all`)
        if (!isSystemEvent(event)) return position
        oldest = BigInt(position)
      }
    } catch (error) {
      throw toPortError(error)
    }
    // Only KurrentDB's own events so far: look further back, or there is nothing of ours.
    if (returned < 100 || oldest === null || oldest === 0n) return 0
    from = { commit: oldest - 1n, prepare: oldest - 1n }
  }
}
