import { KurrentDBClient } from '@kurrent/kurrentdb-client'
import { appendTogether, type EsdbWriter, importEvents } from './esdb-appends.ts'
import { fromKurrent, multiStreamAppendOffered, type ServerMode, serverMode } from './esdb-mapping.ts'
import { headPosition, readAll, readChain, readRaw, readStreams } from './esdb-reads.ts'
import { CatchUpSubscription } from './esdb-subscribe.ts'
import { appendStreamByStream, type EventStore, type Subscription } from './port.ts'

/** Streams of a batch appended at once when the server appends one stream at a time. */
const APPEND_CONCURRENCY = 32

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

/** How the store works with the server behind `client`: whether it has multi-stream appends, and so the batches it offers. */
async function probe(client: KurrentDBClient, options: EsdbOptions): Promise<{ mode: ServerMode; multiStream: boolean }> {
  let probeError: unknown = null
  // Nothing to append: a server with multi-stream appends refuses the empty request; one
  // without is recognised by the client before anything is sent.
  await client.multiStreamAppend([]).catch((error: unknown) => (probeError = error))
  const multiStream = multiStreamAppendOffered(probeError)
  const mode = serverMode({ version: await reportedVersion(client), multiStreamAppend: multiStream }, options.singleStreamAppends ?? false)
  return { mode, multiStream }
}

/**
 * The event store on KurrentDB (EventStoreDB's successor), through `@kurrent/kurrentdb-client`:
 * reading in esdb-reads.ts, appending and importing in esdb-appends.ts, subscribing in
 * esdb-subscribe.ts, the mapping between the port and KurrentDB in esdb-mapping.ts.
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
  let server: { mode: ServerMode; multiStream: boolean }
  try {
    server = await probe(client, options)
  } catch (error) {
    await client.dispose()
    throw error
  }
  const { mode } = server
  const writer: EsdbWriter = { client, multiStream: server.multiStream }
  const subscriptions = new Set<Subscription>()
  const readStream = async (stream: string) => (await readRaw(client, stream)).map(fromKurrent)
  return {
    server: mode,
    batches: mode.batches,
    append: async (stream, events, expected) => (await appendTogether(writer, [{ stream, events, expected }]))[0]!,
    appendMany: (writes) =>
      mode.batches === 'all-or-nothing'
        ? appendTogether(writer, writes)
        : appendStreamByStream(writes, async (write) => (await appendTogether(writer, [write]))[0]!, APPEND_CONCURRENCY),
    readStream,
    readStreams: (streams) => readStreams(streams, readStream),
    readAll: (after, options) => readAll(client, after, options),
    subscribe(after, handler, options = {}) {
      const subscription: Subscription = new CatchUpSubscription(client, after, handler, options, () => subscriptions.delete(subscription))
      subscriptions.add(subscription)
      return subscription
    },
    headPosition: () => headPosition(client),
    importEvents: (events) => importEvents(writer, mode.batches, events),
    // Several processes append without a global lock and the server assigns positions: each event links to its stream's previous one.
    chain: 'per-stream',
    readChain: (after, limit) => readChain(client, after, limit),
    async close() {
      await Promise.all([...subscriptions].map((s) => s.stop()))
      await client.dispose()
    },
  }
}
