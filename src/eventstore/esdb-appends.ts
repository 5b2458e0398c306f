import type { AppendStreamRequest, KurrentDBClient } from '@kurrent/kurrentdb-client'
import {
  attemptOf,
  EsdbMappingError,
  fromKurrent,
  importChunks,
  linksFor,
  nextLinkOf,
  planWrite,
  streamStateFor,
  toEventData,
  toPortError,
  type WriteExtras,
  type WritePlan,
} from './esdb-mapping.ts'
import { GENESIS } from './chain.ts'
import { readRaw, readStreams } from './esdb-reads.ts'
import { type AppendResult, type BatchGuarantee, checkBatch, type RecordedEvent, type StreamWrite, WrongExpectedRevision } from './port.ts'

/** Rounds of read → check → append before a write that keeps losing races gives up. */
const MAX_ATTEMPTS = 100

/** What appending needs: the client, and whether its server appends to several streams at once. */
export type EsdbWriter = { client: KurrentDBClient; multiStream: boolean }

type AppendRequest = { stream: string; current: number | null; events: ReturnType<typeof toEventData>[] }

/**
 * Writes the given streams at the exact revisions read; KurrentDB refuses if any moved since. Several
 * streams only where the server has multi-stream appends (`batches` all-or-nothing).
 */
async function send({ client, multiStream }: EsdbWriter, requests: AppendRequest[]) {
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

/** The writes in one append (one multi-stream append for several streams): read, plan, send, read back. */
export async function appendTogether(writer: EsdbWriter, writes: readonly StreamWrite[]): Promise<AppendResult[]> {
  if (writes.length === 0) return []
  checkBatch(writes)
  /** What each stream's next event links to, as last read. */
  const links = new Map<string, Uint8Array>()
  const readOnLeader = async (stream: string) => {
    const raw = await readRaw(writer.client, stream, undefined, undefined, true)
    links.set(stream, nextLinkOf(raw))
    return raw.map(fromKurrent)
  }
  for (let attempt = 1; ; attempt++) {
    const read = await readStreams(writes.map((w) => w.stream), readOnLeader)
    const plans: WritePlan[] = writes.map((write) => planWrite(write, read.get(write.stream)!))
    const pending = writes.flatMap((write, w) => (plans[w]!.kind === 'append' ? [{ write, w }] : []))
    const results = plans.map((plan) => (plan.kind === 'duplicate' ? plan.result : null))
    if (pending.length === 0) return results as AppendResult[]

    const marker = crypto.randomUUID()
    try {
      await send(
        writer,
        pending.map(({ write, w }) => {
          const current = (plans[w] as Extract<WritePlan, { kind: 'append' }>).current
          // Linked at the exact revisions the append is made at: a concurrent writer makes it fail, and the next round links again.
          const chain = linksFor(write.stream, current, write.events, links.get(write.stream)!)
          return {
            stream: write.stream,
            current,
            events: write.events.map((event, i) => toEventData(event, { ...(i === 0 ? { attempt: marker } : {}), chain: chain[i] })),
          }
        }),
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
        const raw = await readRaw(writer.client, write.stream, first, write.events.length, true)
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

/** EventStore.importEvents on KurrentDB: chunk by chunk, each all or nothing or stream by stream as `batches` says. */
export async function importEvents(writer: EsdbWriter, batches: BatchGuarantee, events: readonly RecordedEvent[]): Promise<void> {
  /** What each stream's next imported event links to. */
  const links = new Map<string, Uint8Array>()
  const linkOfStream = async (stream: string, current: number | null) =>
    links.get(stream) ?? (current === null ? GENESIS : nextLinkOf(await readRaw(writer.client, stream, undefined, undefined, true)))
  for (const chunk of importChunks(events)) {
    const requests = []
    for (const request of chunk) {
      const chain = linksFor(request.stream, request.current, request.events, await linkOfStream(request.stream, request.current))
      links.set(request.stream, chain.at(-1)!)
      requests.push({
        stream: request.stream,
        current: request.current,
        events: request.events.map((e, i) => toEventData(e, { recordedAt: e.recordedAt, chain: chain[i] } satisfies WriteExtras)),
      })
    }
    if (batches === 'all-or-nothing') await send(writer, requests)
    else for (const request of requests) await send(writer, [request])
  }
}
