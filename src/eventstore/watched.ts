import type { Dependency } from '../runtime/dependency.ts'
import type { EventStore } from './port.ts'

/**
 * `store` with every call kept by `dependency` (src/runtime/dependency.ts): its outages (the
 * adapters' 503s, or those of the database under a SQL store) become the event store's 503 and its
 * state, and a request's calls are bounded. A subscription keeps its own retries.
 */
export function watchedEventStore(store: EventStore, dependency: Dependency): EventStore {
  return {
    batches: store.batches,
    append: (stream, events, expected) => dependency.call(() => store.append(stream, events, expected)),
    appendMany: (writes) => dependency.call(() => store.appendMany(writes)),
    readStream: (stream) => dependency.call(() => store.readStream(stream)),
    readStreams: (streams) => dependency.call(() => store.readStreams(streams)),
    readAll: (after, options) => dependency.call(() => store.readAll(after, options)),
    subscribe: (after, handler, options) => store.subscribe(after, handler, options),
    headPosition: () => dependency.call(() => store.headPosition()),
    importEvents: (events) => dependency.call(() => store.importEvents(events)),
    chain: store.chain,
    readChain: (after, limit) => dependency.call(() => store.readChain(after, limit)),
    ...(store.vouchChain && { vouchChain: (after: number, through: number) => dependency.call(() => store.vouchChain!(after, through)) }),
    close: () => store.close(),
  }
}
