import { asRequest, outsideRequests, sharedCall } from '../runtime/dependency.ts'
import type { EventStore, NewEvent } from './port.ts'

/** `scheduled`: its append is due on the next turn (it takes the callers arriving until then). */
type Batch = { events: NewEvent[]; scheduled: boolean; done: Promise<void>; resolve(): void; reject(error: unknown): void }

function newBatch(): Batch {
  let resolve = () => {}
  let reject: (error: unknown) => void = () => {}
  const done = new Promise<void>((ok, fail) => {
    resolve = ok
    reject = fail
  })
  return { events: [], scheduled: false, done, resolve, reject }
}

/**
 * Appends to one stream being written at once: the next one is begun while the last commits, so
 * that the time between two commits is the store's alone, not also the turn-around of this process.
 */
const WRITING_PER_STREAM = 2

/**
 * Appends to streams that take any revision (records of what happened, nothing decided from them),
 * with group commit: while WRITING_PER_STREAM appends to a stream are being written, the events of
 * every caller that arrives meanwhile wait and go together in the next append. Each caller's promise settles when its
 * own event is stored (or failed to be), so nothing is acknowledged before it is durable; under load
 * one transaction carries many events instead of one each.
 *
 * Each append runs as a request of its own (src/runtime/dependency.ts): bounded, but never by the
 * time some caller already spent, nor refused for that caller's failures. Run in the context of the
 * caller that happened to start the chain of appends, every later append was charged to that one
 * request, whose budget ran out within a second or two of load: then every caller of an append was
 * refused at once, a burst of 503s on a healthy database. Each caller waits within its own budget.
 */
export class GroupedAppends {
  private readonly waiting = new Map<string, Batch>()
  /** Appends being written (or about to be), by stream. */
  private readonly writing = new Map<string, number>()

  constructor(private readonly store: Pick<EventStore, 'append'>) {}

  append(stream: string, event: NewEvent): Promise<void> {
    let batch = this.waiting.get(stream)
    if (!batch) this.waiting.set(stream, (batch = newBatch()))
    batch.events.push(event)
    if ((this.writing.get(stream) ?? 0) < WRITING_PER_STREAM && !batch.scheduled) outsideRequests(() => this.writeSoon(stream, batch))
    return sharedCall('event store', batch.done)
  }

  /**
   * Writes on the event loop's next turn, not at once: requests still being read (their sockets
   * are polled between turns) reach `append` meanwhile and join the batch. Started at once, an
   * embedded store's transaction would keep the loop busy and every batch would hold one event.
   */
  private writeSoon(stream: string, batch: Batch): void {
    batch.scheduled = true
    this.writing.set(stream, (this.writing.get(stream) ?? 0) + 1)
    setImmediate(() => this.write(stream, batch))
  }

  private write(stream: string, batch: Batch): void {
    if (this.waiting.get(stream) === batch) this.waiting.delete(stream)
    asRequest(() => this.store.append(stream, batch.events, 'any'))
      .then(() => batch.resolve(), batch.reject)
      .finally(() => {
        const writing = this.writing.get(stream)! - 1
        if (writing === 0) this.writing.delete(stream)
        else this.writing.set(stream, writing)
        const next = this.waiting.get(stream)
        if (next && !next.scheduled) this.writeSoon(stream, next)
      })
  }
}
