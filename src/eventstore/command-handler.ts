import { type EventStore, type RecordedEvent, WrongExpectedRevision } from './port.ts'

type DomainEvent = { type: string; data: Record<string, unknown> }

/** What replaying a stream needs of an aggregate: a domain decider has these (and `decide`). */
export type Aggregate<S, E extends DomainEvent> = {
  initialState: S
  evolve(state: S, event: E): S
  /** Narrows a stored event to the aggregate's own union. */
  is(event: { type: string }): event is E
}

/** The state a stream's recorded events lead to (events of other aggregates are ignored). */
export function stateOf<S, E extends DomainEvent>(aggregate: Aggregate<S, E>, events: readonly RecordedEvent[]): S {
  let state = aggregate.initialState
  for (const event of events) {
    const domain = { type: event.type, data: event.data }
    if (aggregate.is(domain)) state = aggregate.evolve(state, domain)
  }
  return state
}

export async function loadAggregate<S, E extends DomainEvent>(
  store: EventStore,
  stream: string,
  aggregate: Aggregate<S, E>,
): Promise<{ state: S; revision: number | 'no_stream'; events: RecordedEvent[] }> {
  const events = await store.readStream(stream)
  return { state: stateOf(aggregate, events), revision: events.length === 0 ? 'no_stream' : events[events.length - 1]!.revision, events }
}

/**
 * Load → decide → append with the loaded revision as the expected one. A concurrent writer makes
 * the append fail with WrongExpectedRevision rather than both decisions being recorded.
 */
export async function handleCommand<S, E extends DomainEvent>(
  store: EventStore,
  stream: string,
  aggregate: Aggregate<S, E>,
  decide: (state: S) => E[],
  newEventId: () => string,
): Promise<{ events: E[]; state: S }> {
  const { state, revision } = await loadAggregate(store, stream, aggregate)
  const events = decide(state)
  if (events.length > 0) {
    await store.append(
      stream,
      events.map((e) => ({ id: newEventId(), type: e.type, data: e.data })),
      revision,
    )
  }
  return { events, state: events.reduce(aggregate.evolve, state) }
}

/**
 * `handleCommand`, decided again on the stream as it then stands when a concurrent writer appended
 * first, up to `attempts` times: for commands whose decision only depends on the stream (an owner's
 * webhooks, a limit counted on it), so that racing requests are each decided, none lost to a 500.
 */
export async function handleCommandRetrying<S, E extends DomainEvent>(
  store: EventStore,
  stream: string,
  aggregate: Aggregate<S, E>,
  decide: (state: S) => E[],
  newEventId: () => string,
  attempts = 50,
): Promise<{ events: E[]; state: S }> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await handleCommand(store, stream, aggregate, decide, newEventId)
    } catch (error) {
      if (!(error instanceof WrongExpectedRevision) || error.stream !== stream || attempt >= attempts) throw error
    }
  }
}
