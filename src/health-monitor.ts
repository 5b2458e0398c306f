/**
 * What /health and /readyz answer from memory: the dependencies' states, probed in the background,
 * and the read models' lag, measured in the background.
 */
import type { ProjectionLagRow, ServerHealth, WebhookBacklog } from './health/routes.ts'
import { DeliveryLines } from '../projections/webhooks/delivery-lines.ts'
import { watchDependencies } from './runtime/dependency.ts'
import type { Storage } from './storage.ts'

/** Read models are ready while the oldest event any live generation still has to apply is younger than this. */
export const READY_MAX_LAG_SECONDS = 10
/** How often the read models' lag is measured for /health and /readyz. */
const LAG_MEASURE_MS = 500
/** How often the webhook backlog is measured for /health: it is for people, not for the readiness check. */
const BACKLOG_MEASURE_MS = 2000

/** A read model the API answers from memory, loaded in the background after the server starts to serve. */
export type LoadingInMemory = { what: string; firstLoaded: Promise<void> }

/**
 * Watches the storage's dependencies and `others` (the rate limiter), and measures the read models'
 * lag in the background, so that /health and /readyz answer from memory (docs/errors.md, "When a
 * dependency fails"). /readyz is not ready until every one of `inMemory` is first loaded: requests
 * meanwhile wait for it, so a load balancer should send them to a server that has (decision 0125).
 */
export function monitorServer(storage: Storage, others: Storage['dependencies'] = [], inMemory: readonly LoadingInMemory[] = []): ServerHealth & { stop(): void } {
  const watched = [...storage.dependencies, ...others]
  const unloaded = new Set(inMemory.map(({ what }) => what))
  for (const { what, firstLoaded } of inMemory) void firstLoaded.then(() => unloaded.delete(what))
  const probes = watchDependencies(watched)
  let lag: ProjectionLagRow[] | null = null
  let measuring = false
  const measure = () => {
    if (measuring) return
    measuring = true
    storage.runner
      .status()
      .then((rows) => {
        lag = rows
          .filter((g) => g.state !== 'previous' && g.state !== 'retired')
          .map((g) => ({ projection: g.projection, generation: g.generation, state: g.state, lag_events: g.lag_events, lag_seconds: g.lag_seconds }))
      })
      // An outage is the dependencies' to report; the last measure stays until the next succeeds.
      .catch(() => {})
      .finally(() => (measuring = false))
  }
  measure()
  const timer = setInterval(measure, LAG_MEASURE_MS)
  timer.unref?.()
  const lines = new DeliveryLines(storage.db)
  let backlog: WebhookBacklog | null = null
  const measureBacklog = () =>
    lines
      .backlog()
      .then(({ waiting, oldestFailureAt }) => (backlog = { waiting_subscriptions: waiting, oldest_failing_since: oldestFailureAt }))
      .catch(() => {})
  void measureBacklog()
  const backlogTimer = setInterval(measureBacklog, BACKLOG_MEASURE_MS)
  backlogTimer.unref?.()
  return {
    dependencies: () => watched.map(({ dependency }) => dependency.state()),
    projections: () => lag,
    webhooks: () => backlog,
    notReady() {
      const down = watched.find(({ dependency }) => !dependency.reachable)
      if (down) return `the ${down.dependency.name} is unavailable`
      const [loading] = unloaded
      if (loading) return `the ${loading} are being loaded into memory`
      if (!lag) return 'the read models are being measured'
      if (lag.some((g) => g.state !== 'building' && g.state !== 'held' && g.lag_seconds > READY_MAX_LAG_SECONDS)) return 'the read models are catching up'
      return null
    },
    stop() {
      probes.stop()
      clearInterval(timer)
      clearInterval(backlogTimer)
    },
  }
}
