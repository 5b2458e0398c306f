import { type AllStreamResolvedEvent, type KurrentDBClient, streamNameFilter } from '@kurrent/kurrentdb-client'
import { categoryFilter, fromKurrent, isSystemEvent, positionOf, readPositionAfter, toPortError } from './esdb-mapping.ts'
import { pull } from './esdb-pull.ts'
import { DEFAULT_BATCH } from './esdb-reads.ts'
import { wakeablePause } from './pause.ts'
import type { RecordedEvent, SubscribeOptions, Subscription } from './port.ts'

/** The events of `batch` to hand over: after `position`, none of KurrentDB's own, of the categories asked for. */
function eventsToDeliver(batch: readonly AllStreamResolvedEvent[], position: number, filter: ReturnType<typeof categoryFilter>): RecordedEvent[] {
  const events: RecordedEvent[] = []
  for (const { event } of batch) {
    if (!event) continue
    const at = positionOf(event.position, `event ${event.id} in $all`)
    if (at <= position || isSystemEvent(event) || !filter.matches(event.streamId)) continue
    events.push(fromKurrent(event))
  }
  return events
}

/**
 * EventStore.subscribe on KurrentDB: a catch-up subscription to `$all` from the last delivered
 * position. After a dropped connection it starts again from there (backing off up to 5 s), so
 * nothing is skipped and nothing handed over twice.
 */
export class CatchUpSubscription implements Subscription {
  /** Position of the last event handed to the handler. */
  position: number
  private stopped = false
  private live: ReturnType<typeof pull> | null = null
  private readonly limit: number
  private readonly filter: ReturnType<typeof categoryFilter>
  private readonly sleep = wakeablePause()
  private readonly loop: Promise<void>
  /** A failure was reported (onError) and nothing has worked since. */
  private failing = false

  constructor(
    private readonly client: KurrentDBClient,
    after: number,
    private readonly handler: (events: RecordedEvent[]) => Promise<void>,
    private readonly options: SubscribeOptions,
    private readonly onStopped: () => void,
  ) {
    this.position = after
    this.limit = options.limit ?? DEFAULT_BATCH
    this.filter = categoryFilter(options.categories)
    this.loop = this.run()
  }

  async stop(): Promise<void> {
    this.stopped = true
    this.sleep.wake()
    this.live?.end()
    await this.loop
    this.onStopped()
  }

  private async run(): Promise<void> {
    let failures = 0
    while (!this.stopped) {
      const subscription = this.client.subscribeToAll(
        {
          fromPosition: readPositionAfter(this.position),
          ...(this.filter.prefixes ? { filter: streamNameFilter({ prefixes: this.filter.prefixes }) } : {}),
        },
        { highWaterMark: this.limit },
      )
      this.live = pull(subscription)
      // The server confirms a subscription it serves: from there it is caught up or hands over events.
      subscription.once('confirmation', () => this.working())
      try {
        await this.follow(this.live, () => (failures = 0))
        if (!this.stopped) throw new Error('KurrentDB ended the subscription')
      } catch (error) {
        if (this.stopped) break
        failures += 1
        this.failing = true
        this.options.onError?.(toPortError(error))
        await this.sleep.pause(Math.min(5000, 250 * 2 ** failures))
      } finally {
        this.live = null
        await subscription.unsubscribe().catch(() => {})
      }
    }
  }

  /** Tells `onRecovered` once after a failure, when the server serves the subscription again or the handler took a batch. */
  private working(): void {
    if (this.failing) this.options.onRecovered?.()
    this.failing = false
  }

  /**
   * Hands over what one server subscription delivers until it ends or this one stops. `working` is
   * told of each batch that brings events: the connection works, so the back-off starts over.
   */
  private async follow(live: ReturnType<typeof pull>, working: () => void): Promise<void> {
    for (;;) {
      const batch = await live.next(this.limit)
      if (batch === null || this.stopped) return
      const events = eventsToDeliver(batch, this.position, this.filter)
      if (events.length === 0) continue
      working()
      await this.deliver(events)
    }
  }

  /** Hands a batch over until the handler takes it (the port retries a failed batch, skipping nothing). */
  private async deliver(events: RecordedEvent[]): Promise<void> {
    while (!this.stopped) {
      try {
        await this.handler(events)
        this.position = events.at(-1)!.position
        this.working()
        return
      } catch (error) {
        this.failing = true
        this.options.onError?.(error)
        await this.sleep.pause(1000)
      }
    }
  }
}
