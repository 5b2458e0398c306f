/**
 * What the metrics count, mapped from what the system does: appends timed and the briefings they
 * record counted by outcome, writer failures counted. The rest reports through the `Metrics` port
 * itself (src/metrics/port.ts); this file is where events and failures become figures.
 */
import type { BriefingEventSchemas } from './domain/briefings/events.ts'
import type { BriefingWriter } from './domain/briefings/writer.ts'
import type { EventStore } from './eventstore/port.ts'
import { measuredEventStore } from './metrics/event-store.ts'
import type { BriefingOutcome, Metrics } from './metrics/port.ts'

/** The briefing events, as the metrics count them. */
const BRIEFING_OUTCOMES: Partial<Record<keyof typeof BriefingEventSchemas | 'BriefingReplayed', BriefingOutcome>> = {
  BriefingGenerated: 'generated',
  BriefingServedFromCache: 'cache_hit',
  BriefingReplayed: 'replayed',
}

/** `store` with its appends timed and each briefing it records counted by outcome. */
export const meteredEventStore = (store: EventStore, metrics: Metrics): EventStore =>
  measuredEventStore(store, metrics, (events) => {
    for (const event of events) {
      const outcome = BRIEFING_OUTCOMES[event.type as keyof typeof BRIEFING_OUTCOMES]
      if (outcome) metrics.briefing(outcome)
    }
  })

/** `writer` with each failure counted (a writer that throws fails the request: 502 upstream_error), once per failure. */
export const meteredWriter = (writer: BriefingWriter, metrics: Metrics): BriefingWriter => ({
  write: (...args) => writer.write(...args).catch((error: unknown) => (metrics.writerFailed(), Promise.reject(error))),
})
