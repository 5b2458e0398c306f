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
 */
export class GroupedAppends {
  private readonly waiting = new Map<string, Batch>()
  private readonly writing = new Set<string>()

  constructor(private readonly store: Pick<EventStore, 'append'>) {}

  append(stream: string, event: NewEvent): Promise<void> {
    let batch = this.waiting.get(stream)
    if (!batch) this.waiting.set(stream, (batch = newBatch()))
    batch.events.push(event)
    if (!this.writing.has(stream)) this.write(stream)
    return batch.done
  }

  private write(stream: string): void {
    const batch = this.waiting.get(stream)
    if (!batch) return
    this.waiting.delete(stream)
    this.writing.add(stream)
    this.store
      .append(stream, batch.events, 'any')
      .then(() => batch.resolve(), batch.reject)
      .finally(() => {
        this.writing.delete(stream)
        this.write(stream)
      })
  }
}
