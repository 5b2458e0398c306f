import { AsyncLocalStorage } from 'node:async_hooks'
import { AppError } from '../shared/errors.ts'

/**
 * The servers the API depends on, each tracked by a `Dependency`: whether it answers, since when, and
 * when it last did (docs/errors.md, "When a dependency fails"). Names are classes, never addresses.
 */
export type DependencyName = 'event store' | 'read-model database' | 'rate limiter'

/** Longest wait of a request for one call to a dependency; the next calls fail at once while it is down. */
export const CALL_DEADLINE_MS = 1000
/** Longest a request waits for its dependencies, all calls together (docs/errors.md): it is answered within 2 s. */
export const REQUEST_BUDGET_MS = 1500
/** How often the monitor asks each dependency (`watchDependencies`), and how long it waits for an answer. */
export const PROBE_INTERVAL_MS = 250
export const PROBE_DEADLINE_MS = 500

/**
 * What a failed call says of its dependency: `unreachable` (the adapter could not reach it), `slow` (no
 * answer within a whole CALL_DEADLINE_MS) or `nothing` (the request ran out of its own time first).
 */
export type Evidence = 'unreachable' | 'slow' | 'nothing'

/** The 503 of a request that needs a dependency that does not answer; a retry is safe (docs/idempotency.md). */
export class DependencyUnavailable extends AppError {
  constructor(
    readonly dependency: DependencyName,
    /** For the log only: may name an address, so it never reaches a client. */
    readonly reason: string,
    /** False when the call was refused before reaching the dependency (its outcome is known: nothing). */
    readonly sent = true,
    readonly evidence: Evidence = 'unreachable',
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

/**
 * A request in progress: whether a dependency already failed it, and how long it waited for its
 * dependencies: the time during which at least one of its calls was pending (`waiting` of them, since
 * `since`), so that a call made inside another (the event store's over its database) or beside
 * another counts once.
 */
type RequestScope = { metOutage: boolean; waitedMs: number; waiting: number; since: number }
const requests = new AsyncLocalStorage<RequestScope>()

const waitedOf = (request: RequestScope): number => request.waitedMs + (request.waiting > 0 ? performance.now() - request.since : 0)
function startWaiting(request: RequestScope): void {
  if (request.waiting++ === 0) request.since = performance.now()
}
function stopWaiting(request: RequestScope): void {
  if (--request.waiting === 0) request.waitedMs += performance.now() - request.since
}

/** Runs `handle` as a request: its calls to dependencies are bounded (`Dependency.call`). */
export const asRequest = <T>(handle: () => T): T => requests.run({ metOutage: false, waitedMs: 0, waiting: 0, since: 0 }, handle)
/**
 * Gives the request its whole budget again: for a request that waits its turn behind another (an
 * Idempotency-Key held elsewhere), each turn is bounded, not the wait, which is documented apart.
 */
export const nextTurn = (): void => {
  const request = requests.getStore()
  if (request) {
    request.waitedMs = 0
    request.since = performance.now()
  }
}
/** Runs `work`, started by a request, as work of its own: unbounded, like the projections' (e.g. a retry for later). */
export const outsideRequests = <T>(work: () => T): T => requests.exit(work)

/** A call that outlived its deadline (its outcome is unknown). */
export class DeadlinePassed extends Error {
  constructor(readonly ms: number) {
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
 * Waits, within a request, for work it shares with other requests and that runs as a request of its
 * own (a group of appends, src/eventstore/grouped-appends.ts): at most what is left of this request's
 * deadline and budget, counted as time waited for `dependency`. The shared work's own calls keep the
 * dependency's state; a wait cut short here is this request's 503 and says nothing of the dependency.
 */
export async function sharedCall<T>(dependency: DependencyName, shared: Promise<T>): Promise<T> {
  const request = requests.getStore()
  if (!request) return shared
  const ms = Math.max(0, Math.min(CALL_DEADLINE_MS, REQUEST_BUDGET_MS - waitedOf(request)))
  startWaiting(request)
  try {
    return await beforeDeadline(shared, ms)
  } catch (error) {
    if (!(error instanceof DeadlinePassed)) throw error
    request.metOutage = true
    throw new DependencyUnavailable(dependency, reasonOf(error), true, 'nothing')
  } finally {
    stopWaiting(request)
  }
}

/**
 * A request's failures mean the dependency is down once they last this long with no answer between
 * them: a connection lost or slow to open rejects the queries queued on it at once, while its
 * neighbours answer. A probe's failure (`watchDependencies`) counts at once.
 */
const FAILING_FOR_DOWN_MS = 500
/** The return of a dependency is logged once it has answered this long without failing again. */
const BACK_FOR_LOG_MS = 1000

/**
 * One dependency's state, kept from every call's outcome and from the monitor's probes. Logs its
 * changes, not its failures: one line when it goes away, one when it is back for good (a recovery
 * that stumbles, as connections are opened again, belongs to the same outage).
 */
export class Dependency {
  private down: { since: number; reason: string } | null = null
  private lastReachable: number
  /**
   * The first failure since the last answer; `confirmed` once it is not one slow call alone (the
   * adapter could not reach the dependency, a probe failed, or another call failed too): only then are
   * other requests' calls refused before it is judged down.
   */
  private failing: { since: number; confirmed: boolean } | null = null
  /** The outage logged, whose end is not logged yet; `back`: when the dependency last came back. */
  private logged: { since: number; back: number | null } | null = null

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
    const now = this.now()
    this.lastReachable = now
    this.failing = null
    if (this.down) {
      this.down = null
      if (this.logged) this.logged.back = now
    }
    if (this.logged?.back != null && now - this.logged.back >= BACK_FOR_LOG_MS) {
      this.log('dependency_up', { dependency: this.name, down_seconds: (this.logged.back - this.logged.since) / 1000 })
      this.logged = null
    }
  }

  /**
   * `certain`: a probe's failure, which no lost connection explains away. `slow`: a call that had its
   * whole deadline and no answer, which alone may be that call's (a long transaction), not the dependency's.
   */
  failed(reason: string, certain = false, slow = false): void {
    const now = this.now()
    if (this.failing) this.failing.confirmed = true
    else this.failing = { since: now, confirmed: certain || !slow }
    if (this.down || (!certain && now - this.failing.since < FAILING_FOR_DOWN_MS)) return
    this.down = { since: now, reason }
    if (this.logged) {
      this.logged.back = null
      return
    }
    this.logged = { since: now, back: null }
    this.log('dependency_down', { dependency: this.name, reason, message: `the ${this.name} is unavailable; requests that need it get 503 until it is back` })
  }

  state(): DependencyState {
    return { name: this.name, reachable: this.reachable, seconds_since_reachable: (this.now() - this.lastReachable) / 1000 }
  }

  /**
   * Runs one call to the dependency. Within a request (`asRequest`) the call is refused at once while
   * the dependency is down or its failure is confirmed (see `failing`), once a call of the request met
   * an outage or once the request waited REQUEST_BUDGET_MS for its dependencies, and waits at most
   * CALL_DEADLINE_MS. Elsewhere (projections, probes, commands) it runs unbounded. A failure that says
   * the dependency did not answer becomes this dependency's 503; any other outcome proves it answered.
   */
  async call<T>(work: () => Promise<T>): Promise<T> {
    const request = requests.getStore()
    // A confirmed `failing`: calls failed and none answered since; a call queued behind them (e.g. a
    // charge behind another of the same quota, src/briefings/ledger.ts) waited for that failure already.
    if (request && (request.metOutage || this.down || this.failing?.confirmed || waitedOf(request) >= REQUEST_BUDGET_MS)) {
      throw new DependencyUnavailable(this.name, this.down?.reason ?? 'the request spent its time for dependencies', false)
    }
    if (request) startWaiting(request)
    try {
      const result = await (request ? beforeDeadline(work(), Math.min(CALL_DEADLINE_MS, REQUEST_BUDGET_MS - waitedOf(request))) : work())
      this.answered()
      return result
    } catch (error) {
      // Only a passed deadline and the adapters' 503s are outages; a refusal (a conflict) is an answer.
      if (!(error instanceof DeadlinePassed) && !isUnavailable(error)) {
        this.answered()
        throw error
      }
      if (request) request.metOutage = true
      const sent = !(error instanceof DependencyUnavailable) || error.sent
      // A deadline cut short by the request's budget is the request's lack of time, not the dependency's.
      const evidence: Evidence =
        error instanceof DeadlinePassed ? (error.ms < CALL_DEADLINE_MS ? 'nothing' : 'slow') : error instanceof DependencyUnavailable ? error.evidence : 'unreachable'
      if (sent && evidence !== 'nothing') this.failed(reasonOf(error), false, evidence === 'slow')
      throw new DependencyUnavailable(this.name, reasonOf(error), sent, evidence)
    } finally {
      if (request) stopWaiting(request)
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
      const expired = setTimeout(() => !settled && dependency.failed(`no answer within ${PROBE_DEADLINE_MS} ms`, true), PROBE_DEADLINE_MS)
      asked
        .then(
          () => dependency.answered(),
          (error) => dependency.failed(reasonOf(error), true),
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
