import { AsyncLocalStorage } from 'node:async_hooks'
import { AppError } from '../shared/errors.ts'

/**
 * The servers the API depends on, each tracked by a `Dependency`: whether it answers, since when, and
 * when it last did (docs/errors.md, "When a dependency fails"). Names are classes, never addresses.
 */
export type DependencyName = 'event store' | 'read-model database' | 'rate limiter'

/** Longest wait of a request for one call to a dependency; the next calls fail at once while it is down. */
export const CALL_DEADLINE_MS = 1000
/** How often the monitor asks each dependency (`watchDependencies`), and how long it waits for an answer. */
export const PROBE_INTERVAL_MS = 250
export const PROBE_DEADLINE_MS = 500

/** The 503 of a request that needs a dependency that does not answer; a retry is safe (docs/idempotency.md). */
export class DependencyUnavailable extends AppError {
  constructor(
    readonly dependency: DependencyName,
    /** For the log only: may name an address, so it never reaches a client. */
    readonly reason: string,
  ) {
    super('service_unavailable', `the ${dependency} is unavailable; retry in a moment`, {}, { 'Retry-After': '1' })
    this.name = 'DependencyUnavailable'
  }
}

/** Whether `error` says a dependency did not answer (any adapter's 503). */
export const isUnavailable = (error: unknown): error is AppError => error instanceof AppError && error.code === 'service_unavailable'

const reasonOf = (error: unknown): string =>
  error instanceof DependencyUnavailable ? error.reason : error instanceof Error ? error.message || error.name : String(error)

/** What the admin /health shows of one dependency. */
export type DependencyState = { name: DependencyName; reachable: boolean; seconds_since_reachable: number }

/** Told once when a dependency goes away (`dependency_down`) and once when it returns (`dependency_up`). */
export type DependencyLog = (event: 'dependency_down' | 'dependency_up', fields: Record<string, unknown>) => void

const requests = new AsyncLocalStorage<true>()

/** Runs `handle` as a request: its calls to dependencies are bounded (`Dependency.call`). */
export const asRequest = <T>(handle: () => T): T => requests.run(true, handle)

/** A call that outlived its deadline (its outcome is unknown). */
export class DeadlinePassed extends Error {
  constructor(ms: number) {
    super(`no answer within ${ms} ms`)
    this.name = 'DeadlinePassed'
  }
}

/** Settles like `promise`, or rejects with DeadlinePassed once `ms` have passed. */
export async function beforeDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlinePassed(ms)), ms)
  })
  try {
    return await Promise.race([promise, expired])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * One dependency's state, kept from every call's outcome and from the monitor's probes. Logs its
 * changes, not its failures: one line when it goes away, one when it is back.
 */
export class Dependency {
  private down: { since: number; reason: string } | null = null
  private lastReachable: number

  constructor(
    readonly name: DependencyName,
    private readonly log: DependencyLog,
    private readonly now: () => number = Date.now,
  ) {
    this.lastReachable = now()
  }

  get reachable(): boolean {
    return this.down === null
  }

  answered(): void {
    this.lastReachable = this.now()
    if (!this.down) return
    this.log('dependency_up', { dependency: this.name, down_seconds: (this.lastReachable - this.down.since) / 1000 })
    this.down = null
  }

  failed(reason: string): void {
    if (this.down) return
    this.down = { since: this.now(), reason }
    this.log('dependency_down', { dependency: this.name, reason, message: `the ${this.name} is unavailable; requests that need it get 503 until it is back` })
  }

  state(): DependencyState {
    return { name: this.name, reachable: this.reachable, seconds_since_reachable: (this.now() - this.lastReachable) / 1000 }
  }

  /**
   * Runs one call to the dependency. Within a request (`asRequest`) the call is refused at once while
   * the dependency is down, and waits at most CALL_DEADLINE_MS; elsewhere (projections, probes,
   * commands) it runs unbounded. A failure that says the dependency did not answer becomes this
   * dependency's 503; any other outcome proves it answered.
   */
  async call<T>(work: () => Promise<T>): Promise<T> {
    const bounded = requests.getStore() === true
    if (bounded && this.down) throw new DependencyUnavailable(this.name, this.down.reason)
    try {
      const result = await (bounded ? beforeDeadline(work(), CALL_DEADLINE_MS) : work())
      this.answered()
      return result
    } catch (error) {
      // Only a passed deadline and the adapters' 503s are outages; a refusal (a conflict) is an answer.
      if (!(error instanceof DeadlinePassed) && !isUnavailable(error)) {
        this.answered()
        throw error
      }
      this.failed(reasonOf(error))
      throw new DependencyUnavailable(this.name, reasonOf(error))
    }
  }
}

/**
 * Asks every dependency every PROBE_INTERVAL_MS (at most one probe of each in flight, each given
 * PROBE_DEADLINE_MS), so that an outage and a recovery are noticed within a second with no request
 * at all. A probe still pending past its deadline keeps its dependency down until it settles.
 */
export function watchDependencies(probes: readonly { dependency: Dependency; probe(): Promise<unknown> }[]): { stop(): void } {
  const pending = new Set<Dependency>()
  const timer = setInterval(() => {
    for (const { dependency, probe } of probes) {
      if (pending.has(dependency)) continue
      pending.add(dependency)
      const asked = probe()
      let settled = false
      const expired = setTimeout(() => !settled && dependency.failed(`no answer within ${PROBE_DEADLINE_MS} ms`), PROBE_DEADLINE_MS)
      asked
        .then(
          () => dependency.answered(),
          (error) => dependency.failed(reasonOf(error)),
        )
        .finally(() => {
          settled = true
          clearTimeout(expired)
          pending.delete(dependency)
        })
    }
  }, PROBE_INTERVAL_MS)
  timer.unref?.()
  return { stop: () => clearInterval(timer) }
}
