import {
  type AppendStreamRequest,
  BACKWARDS,
  END,
  KurrentDBClient,
  type ReadPosition,
  type RecordedEvent as KurrentRecordedEvent,
  START,
  streamNameFilter,
} from '@kurrent/kurrentdb-client'
import {
  attemptOf,
  categoryFilter,
  EsdbMappingError,
  fromKurrent,
  importChunks,
  isStreamNotFound,
  isSystemEvent,
  multiStreamAppendOffered,
  planWrite,
  positionOf,
  readPositionAfter,
  type ServerMode,
  serverMode,
  streamStateFor,
  toEventData,
  toPortError,
  type WriteExtras,
  type WritePlan,
} from './esdb-mapping.ts'
import { pull } from './esdb-pull.ts'
import {
  type AppendResult,
  appendStreamByStream,
  checkBatch,
  type EventStore,
  type ExpectedRevision,
  type NewEvent,
  type ReadAllOptions,
  type RecordedEvent,
  type StreamWrite,
  type SubscribeOptions,
  type Subscription,
  WrongExpectedRevision,
} from './port.ts'

const DEFAULT_BATCH = 1000
/** Streams read at once by `readStreams` (each is one gRPC call). */
const READ_CONCURRENCY = 32
/** Streams of a batch appended at once when the server appends one stream at a time. */
const APPEND_CONCURRENCY = 32
/** Rounds of read → check → append before a write that keeps losing races gives up. */
const MAX_ATTEMPTS = 100

export type EsdbOptions = {
  /** Append each stream of a batch on its own even where the server could do it all or nothing (SINGLE_STREAM_APPENDS). */
  singleStreamAppends?: boolean
}

/** The store, and how it works with its server (for the start-up log). */
export type EsdbEventStore = EventStore & { readonly server: ServerMode }

/** The version the server reported to the client (it asks once, before its first call); `unknown` if none. */
async function reportedVersion(client: KurrentDBClient): Promise<string> {
  // The client keeps the server's features behind a protected getter; only the version is read.
  const features = (client as unknown as { capabilities: Promise<{ serverVersion?: string }> }).capabilities
  return (await features.catch(() => null))?.serverVersion ?? 'unknown'
}

/**
 * The event store on KurrentDB (EventStoreDB's successor), through `@kurrent/kurrentdb-client`.
 *
 * Appends read the streams they write, apply the port's rules (duplicates, partly recorded ids,
 * expected revisions) and append with the exact revisions they read, so a concurrent writer makes
 * KurrentDB refuse and the round is played again on fresh state. Several streams go in one
 * multi-stream append (all or nothing) on KurrentDB 25.1 and later; on older servers each is
 * appended on its own (see ServerMode). `$all` reads and the catch-up subscription skip
 * KurrentDB's own (system) events; categories become a server-side stream-prefix filter.
 */
export async function openEsdbEventStore(connectionString: string, options: EsdbOptions = {}): Promise<EsdbEventStore> {
  const client = KurrentDBClient.connectionString(connectionString)
  let mode: ServerMode
  let multiStream: boolean
  try {
    let probeError: unknown = null
    // Nothing to append: a server with multi-stream appends refuses the empty request; one
    // without is recognised by the client before anything is sent.
    await client.multiStreamAppend([]).catch((error: unknown) => (probeError = error))
    multiStream = multiStreamAppendOffered(probeError)
    mode = serverMode({ version: await reportedVersion(client), multiStreamAppend: multiStream }, options.singleStreamAppends ?? false)
  } catch (error) {
    await client.dispose()
    throw error
  }
  const subscriptions = new Set<Subscription>()

  /**
   * Events of one stream from a revision on (all when omitted), as KurrentDB returns them. Reads that
   * decide an append ask the leader: a follower's older state would only cost another round.
   */
  async function readRaw(stream: string, from?: number, count?: number, requiresLeader = false): Promise<KurrentRecordedEvent[]> {
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

  const readStream = async (stream: string) => (await readRaw(stream)).map(fromKurrent)
  const readStreamOnLeader = async (stream: string) => (await readRaw(stream, undefined, undefined, true)).map(fromKurrent)

  async function readStreams(streams: readonly string[], read = readStream): Promise<Map<string, RecordedEvent[]>> {
    const unique = [...new Set(streams)]
    const byStream = new Map<string, RecordedEvent[]>()
    for (let i = 0; i < unique.length; i += READ_CONCURRENCY) {
      const slice = unique.slice(i, i + READ_CONCURRENCY)
      const events = await Promise.all(slice.map(read))
      slice.forEach((stream, j) => byStream.set(stream, events[j]!))
    }
    return byStream
  }

  /**
   * Writes the given streams at the exact revisions read; KurrentDB refuses if any moved since. Several
   * streams only where the server has multi-stream appends (`batches` all-or-nothing).
   */
  async function send(requests: { stream: string; current: number | null; events: ReturnType<typeof toEventData>[] }[]) {
    try {
      if (!multiStream) {
        if (requests.length !== 1) throw new EsdbMappingError(`${requests.length} streams in one append, on a server without multi-stream appends`)
        const [only] = requests
        await client.appendToStream(only!.stream, only!.events, { streamState: streamStateFor(only!.current) })
        return
      }
      const batch: AppendStreamRequest[] = requests.map((r) => ({
        streamName: r.stream,
        events: r.events,
        expectedState: streamStateFor(r.current),
      }))
      await client.multiStreamAppend(batch)
    } catch (error) {
      throw toPortError(error)
    }
  }

  const appendMany = (writes: readonly StreamWrite[]): Promise<AppendResult[]> =>
    mode.batches === 'all-or-nothing'
      ? appendTogether(writes)
      : appendStreamByStream(writes, async (write) => (await appendTogether([write]))[0]!, APPEND_CONCURRENCY)

  /** The writes in one append (one multi-stream append for several streams): read, plan, send, read back. */
  async function appendTogether(writes: readonly StreamWrite[]): Promise<AppendResult[]> {
    if (writes.length === 0) return []
    checkBatch(writes)
    for (let attempt = 1; ; attempt++) {
      const read = await readStreams(writes.map((w) => w.stream), readStreamOnLeader)
      const plans: WritePlan[] = writes.map((write) => planWrite(write, read.get(write.stream)!))
      const pending = writes.flatMap((write, w) => (plans[w]!.kind === 'append' ? [{ write, w }] : []))
      const results = plans.map((plan) => (plan.kind === 'duplicate' ? plan.result : null))
      if (pending.length === 0) return results as AppendResult[]

      const marker = crypto.randomUUID()
      try {
        await send(
          pending.map(({ write, w }) => ({
            stream: write.stream,
            current: (plans[w] as Extract<WritePlan, { kind: 'append' }>).current,
            events: write.events.map((event, i) => toEventData(event, i === 0 ? { attempt: marker } : {})),
          })),
        )
      } catch (error) {
        // Another writer got in between the read and the append: decide again on what it wrote.
        if (error instanceof WrongExpectedRevision && attempt < MAX_ATTEMPTS) {
          await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(50, 2 ** attempt)))
          continue
        }
        throw error
      }

      // The appended events, for their positions; a first event carrying another attempt's marker
      // means KurrentDB recognised our ids as a concurrent retry's and wrote nothing for us.
      await Promise.all(
        pending.map(async ({ write, w }) => {
          const first = ((plans[w] as Extract<WritePlan, { kind: 'append' }>).current ?? -1) + 1
          const raw = await readRaw(write.stream, first, write.events.length, true)
          const recorded = raw.map(fromKurrent)
          const ours = recorded.map((e) => e.id.toLowerCase()).join() === write.events.map((e) => e.id.toLowerCase()).join()
          if (!ours) throw new EsdbMappingError(`stream ${write.stream}: the appended events are not at revisions ${first}…`)
          results[w] = {
            revision: recorded.at(-1)!.revision,
            position: recorded.at(-1)!.position,
            duplicate: attemptOf(raw[0]!) !== marker,
          }
        }),
      )
      return results as AppendResult[]
    }
  }

  const append = async (stream: string, events: readonly NewEvent[], expected: ExpectedRevision) =>
    (await appendTogether([{ stream, events, expected }]))[0]!

  /** `$all` from a position, the way the port reads it: exclusive, without system events, filtered exactly. */
  async function readAll(after: number, options: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    const limit = options.limit ?? DEFAULT_BATCH
    const filter = categoryFilter(options.categories)
    const out: RecordedEvent[] = []
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
          out.push(fromKurrent(event))
          if (out.length === limit) return out
        }
      } catch (error) {
        throw toPortError(error)
      }
      if (returned < wanted) return out
    }
  }

  async function headPosition(): Promise<number> {
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

  function subscribe(
    after: number,
    handler: (events: RecordedEvent[]) => Promise<void>,
    options: SubscribeOptions = {},
  ): Subscription {
    const limit = options.limit ?? DEFAULT_BATCH
    const filter = categoryFilter(options.categories)
    let position = after
    let stopped = false
    let live: ReturnType<typeof pull> | null = null
    let wake: () => void = () => {}
    const pause = (ms: number) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms)
        wake = () => {
          clearTimeout(timer)
          resolve()
        }
      })

    /** Hands a batch over until the handler takes it (the port retries a failed batch, skipping nothing). */
    async function deliver(events: RecordedEvent[]) {
      while (!stopped) {
        try {
          await handler(events)
          position = events.at(-1)!.position
          return
        } catch (error) {
          options.onError?.(error)
          await pause(1000)
        }
      }
    }

    const loop = (async () => {
      let failures = 0
      while (!stopped) {
        // A catch-up subscription from the last delivered position: after a dropped connection it
        // starts again from there, so nothing is skipped and nothing handed over twice.
        const subscription = client.subscribeToAll(
          {
            fromPosition: readPositionAfter(position),
            ...(filter.prefixes ? { filter: streamNameFilter({ prefixes: filter.prefixes }) } : {}),
          },
          { highWaterMark: limit },
        )
        live = pull(subscription)
        try {
          for (;;) {
            const batch = await live.next(limit)
            if (batch === null || stopped) break
            const events: RecordedEvent[] = []
            for (const { event } of batch) {
              if (!event) continue
              const at = positionOf(event.position, `event ${event.id} in $all`)
              if (at <= position || isSystemEvent(event) || !filter.matches(event.streamId)) continue
              events.push(fromKurrent(event))
            }
            if (events.length === 0) continue
            failures = 0
            await deliver(events)
          }
          if (!stopped) throw new Error('KurrentDB ended the subscription')
        } catch (error) {
          if (stopped) break
          failures += 1
          options.onError?.(toPortError(error))
          await pause(Math.min(5000, 250 * 2 ** failures))
        } finally {
          live = null
          await subscription.unsubscribe().catch(() => {})
        }
      }
    })()

    const subscription: Subscription = {
      get position() {
        return position
      },
      async stop() {
        stopped = true
        wake()
        live?.end()
        await loop
        subscriptions.delete(subscription)
      },
    }
    subscriptions.add(subscription)
    return subscription
  }

  async function importEvents(events: readonly RecordedEvent[]): Promise<void> {
    for (const chunk of importChunks(events)) {
      const requests = chunk.map((request) => ({
        stream: request.stream,
        current: request.current,
        events: request.events.map((e) => toEventData(e, { recordedAt: e.recordedAt } satisfies WriteExtras)),
      }))
      if (mode.batches === 'all-or-nothing') await send(requests)
      else for (const request of requests) await send([request])
    }
  }

  async function close() {
    await Promise.all([...subscriptions].map((s) => s.stop()))
    await client.dispose()
  }

  return {
    server: mode,
    batches: mode.batches,
    append,
    appendMany,
    readStream,
    readStreams: (streams) => readStreams(streams),
    readAll,
    subscribe,
    headPosition,
    importEvents,
    close,
  }
}
