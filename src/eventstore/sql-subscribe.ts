import { wakeablePause } from './pause.ts'
import type { RecordedEvent, SubscribeOptions, Subscription } from './port.ts'
import type { SqlLog } from './sql-log.ts'
import { readAll } from './sql-reads.ts'

/**
 * EventStore.subscribe on the SQL port: reads from the last position handed over, and when there is
 * nothing new waits `log.pollMs` or until an append to one of its categories wakes it.
 */
export function subscribe(
  log: SqlLog,
  after: number,
  handler: (events: RecordedEvent[]) => Promise<void>,
  options: SubscribeOptions = {},
): Subscription {
  let position = after
  let stopped = false
  const { pause, wake } = wakeablePause()
  const waker = { categories: options.categories, wake }
  log.wakers.add(waker)

  let failing = false
  const working = () => {
    if (failing) options.onRecovered?.()
    failing = false
  }
  const loop = (async () => {
    while (!stopped) {
      try {
        const events = await readAll(log.db, position, options)
        if (stopped) break
        if (events.length === 0) {
          working()
          await pause(log.pollMs)
          continue
        }
        await handler(events)
        position = events[events.length - 1]!.position
        working()
      } catch (error) {
        if (stopped) break
        failing = true
        options.onError?.(error)
        await pause(1000)
      }
    }
  })()

  const subscription: Subscription = {
    get position() {
      return position
    },
    async stop() {
      stopped = true
      log.wakers.delete(waker)
      wake()
      await loop
      log.subscriptions.delete(subscription)
    },
  }
  log.subscriptions.add(subscription)
  return subscription
}
