import type { EventStore, NewEvent } from '../eventstore/port.ts'
import type { Metrics } from './port.ts'

/**
 * The store with the duration of every append reported to `metrics`, and `recorded` told of the
 * events each append wrote (not of a retry found recorded already). Everything else passes through.
 */
export function measuredEventStore(store: EventStore, metrics: Metrics, recorded: (events: readonly NewEvent[]) => void): EventStore {
  async function timed<T>(operation: 'append' | 'appendMany', work: () => Promise<T>): Promise<T> {
    const start = performance.now()
    try {
      return await work()
    } finally {
      metrics.appended(operation, (performance.now() - start) / 1000)
    }
  }
  return {
    get batches() {
      return store.batches
    },
    async append(stream, events, expected) {
      const result = await timed('append', () => store.append(stream, events, expected))
      if (!result.duplicate) recorded(events)
      return result
    },
    async appendMany(writes) {
      const results = await timed('appendMany', () => store.appendMany(writes))
      results.forEach((result, i) => result.duplicate || recorded(writes[i]!.events))
      return results
    },
    readStream: (stream) => store.readStream(stream),
    readStreams: (streams) => store.readStreams(streams),
    readAll: (after, options) => store.readAll(after, options),
    subscribe: (after, handler, options) => store.subscribe(after, handler, options),
    headPosition: () => store.headPosition(),
    importEvents: (events) => store.importEvents(events),
    get chain() {
      return store.chain
    },
    readChain: (after, limit) => store.readChain(after, limit),
    ...(store.vouchChain && { vouchChain: store.vouchChain }),
    close: () => store.close(),
  }
}
