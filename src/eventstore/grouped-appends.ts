import { asRequest, outsideRequests, sharedCall } from '../runtime/dependency.ts'
import type { EventStore, NewEvent } from './port.ts'

type Batch = { events: NewEvent[]; done: Promise<void>; resolve(): void; reject(error: unknown): void }

function newBatch(): Batch {
  let resolve = () => {}
  let reject: (error: unknown) => void = () => {}
  const done = new Promise<void>((ok, fail) => {
    resolve = ok
    reject = fail
  })
  return { events: [], done, resolve, reject }
}

/**
 * Appends to streams that take any revision (records of what happened, nothing decided from them),
 * with group commit: while one append to a stream is being written, the events of every caller that
 * arrives meanwhile wait and go together in the next append. Each caller's promise settles when its
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
  private readonly writing = new Set<string>()

  constructor(private readonly store: Pick<EventStore, 'append'>) {}

  append(stream: string, event: NewEvent): Promise<void> {
    let batch = this.waiting.get(stream)
    if (!batch) this.waiting.set(stream, (batch = newBatch()))
    batch.events.push(event)
    if (!this.writing.has(stream)) outsideRequests(() => this.writeSoon(stream))
    return sharedCall('event store', batch.done)
  }

  /**
   * Writes on the event loop's next turn, not at once: requests still being read (their sockets
   * are polled between turns) reach `append` meanwhile and join the batch. Started at once, an
   * embedded store's transaction would keep the loop busy and every batch would hold one event.
   */
  private writeSoon(stream: string): void {
    this.writing.add(stream)
    setImmediate(() => this.write(stream))
  }

  private write(stream: string): void {
    const batch = this.waiting.get(stream)
    if (!batch) {
      this.writing.delete(stream)
      return
    }
    this.waiting.delete(stream)
    asRequest(() => this.store.append(stream, batch.events, 'any'))
      .then(() => batch.resolve(), batch.reject)
      .finally(() => {
        if (this.waiting.has(stream)) this.writeSoon(stream)
        else this.writing.delete(stream)
      })
  }
}
