import { AsyncLocalStorage } from 'node:async_hooks'
import { AppError } from '../shared/errors.ts'

/**
 * The servers the API depends on, each tracked by a `Dependency`: whether it answers, since when, and
 * when it last did (docs/errors.md, "When a dependency fails"). Names are classes, never addresses.
 */
export type DependencyName = 'event store' | 'read-model database' | 'rate limiter'

/** Longest wait of a request for one call to a dependency; the next calls fail at once while it is down. */
export const CALL_DEADLINE_MS = 1000
/**
 * How long a request may take, from its start until its last call to a dependency, by the clock on the
 * wall (docs/errors.md): with the refusal itself it is answered within 2 s. The time a briefing spends
 * with its writer is not counted (`unbounded`): the writer has a timeout of its own.
 */
export const REQUEST_BUDGET_MS = 1500
/** How often the monitor asks each dependency (`watchDependencies`), and how long it waits for an answer. */
export const PROBE_INTERVAL_MS = 250
export const PROBE_DEADLINE_MS = 500

/**
 * What a failed call says of its dependency: `unreachable` (the adapter could not reach it), `slow` (no
 * answer within a whole CALL_DEADLINE_MS) or `nothing` (the request ran out of its own time first).
 */
export type Evidence = 'unreachable' | 'slow' | 'nothing'

/** What a client reads when its request ran out of time with no dependency to blame. */
const OUT_OF_TIME = 'the server could not answer in time; retry in a moment'

/**
 * The 503 of a request that needs a dependency that does not answer; a retry is safe (docs/idempotency.md).
 * Its message names the dependency that failed, or none when the request merely ran out of time
 * (`nothing`): a busy server, a queue of other requests, a slow answer cut short by the request's bound.
 */
export class DependencyUnavailable extends AppError {
  constructor(
    readonly dependency: DependencyName,
    /** For the log only: may name an address, so it never reaches a client. */
    readonly reason: string,
    /** False when the call was refused before reaching the dependency (its outcome is known: nothing). */
    readonly sent = true,
    readonly evidence: Evidence = 'unreachable',
    /**
     * Whether the client is told the dependency failed: it could not be reached, or is judged down (its
     * probe went unanswered, or its calls failed for half a second with no answer). Slow calls, which
     * may be a busy machine's or a burst queued on the append lock, and a request out of its time are not.
     */
    readonly blamed = evidence !== 'nothing',
  ) {
    super('service_unavailable', blamed ? `the ${dependency} is unavailable; retry in a moment` : OUT_OF_TIME, {}, { 'Retry-After': '1' })
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
 * A request in progress: when its time runs out (`deadline`, on `performance.now()`), and the first
 * outage it met, which every later refusal of the request names: a request refused because the
 * database failed it is refused for the database, whatever it calls next.
 */
type RequestScope = { deadline: number; met: DependencyUnavailable | null }
const requests = new AsyncLocalStorage<RequestScope>()

const timeLeft = (request: RequestScope): number => request.deadline - performance.now()

/** Whether the caller runs as a request (`asRequest`), its calls bounded; elsewhere (start-up, projections, commands) it does not. */
export const inRequest = (): boolean => requests.getStore() !== undefined
/** Runs `handle` as a request: its calls to dependencies are bounded (`Dependency.call`). */
export const asRequest = <T>(handle: () => T): T => requests.run({ deadline: performance.now() + REQUEST_BUDGET_MS, met: null }, handle)
/**
 * Gives the request its whole budget again: for a request that waits its turn behind another (an
 * Idempotency-Key held elsewhere), each turn is bounded, not the wait, which is documented apart.
 */
export const nextTurn = (): void => {
  const request = requests.getStore()
  if (request) request.deadline = performance.now() + REQUEST_BUDGET_MS
}
/** Runs `work`, started by a request, as work of its own: unbounded, like the projections' (e.g. a retry for later). */
export const outsideRequests = <T>(work: () => T): T => requests.exit(work)
/**
 * Runs `work` within a request without counting its time against the request's bound: a briefing's
 * writer, whose own timeout the documentation gives apart. Its calls to dependencies stay bounded.
 */
export async function unbounded<T>(work: () => Promise<T>): Promise<T> {
  const request = requests.getStore()
  if (!request) return work()
  const started = performance.now()
  try {
    return await work()
  } finally {
    request.deadline += performance.now() - started
  }
}

/**
 * Refuses, before it is made, a call of a request that met an outage (named after that outage) or
 * whose time ran out (named after nothing); returns how long the call may wait.
 */
function allowance(request: RequestScope, dependency: DependencyName): number {
  const { met } = request
  if (met) throw new DependencyUnavailable(met.dependency, met.reason, false, met.evidence, met.blamed)
  const left = timeLeft(request)
  if (left <= 0) throw new DependencyUnavailable(dependency, 'the request spent its time', false, 'nothing')
  return Math.min(CALL_DEADLINE_MS, left)
}

/** A call that outlived its deadline (its outcome is unknown). */
export class DeadlinePassed extends Error {
  constructor(readonly ms: number) {
    super(`no answer within ${ms} ms`)
    this.name = 'DeadlinePassed'
  }
}

/**
 * Calls `judge` once `ms` have passed and the event loop has had one more turn: a process that could not
 * run for a while (a busy machine, a long collection) finds its timers due together with the answers
 * that arrived meanwhile, and timers run first. The extra turn lets those answers be read before an
 * answer is judged missing.
 */
function afterDeadline(ms: number, judge: () => void): () => void {
  let turn: ReturnType<typeof setImmediate> | undefined
  const timer = setTimeout(() => (turn = setImmediate(judge)), ms)
  return () => {
    clearTimeout(timer)
    if (turn) clearImmediate(turn)
  }
}

/** Settles like `promise`, or rejects with DeadlinePassed once `ms` have passed (see `afterDeadline`). */
export async function beforeDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  let cancel = () => {}
  const expired = new Promise<never>((_, reject) => {
    cancel = afterDeadline(ms, () => reject(new DeadlinePassed(ms)))
  })
  try {
    return await Promise.race([promise, expired])
  } finally {
    cancel()
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
  try {
    return await beforeDeadline(shared, allowance(request, dependency))
  } catch (error) {
    if (!(error instanceof DeadlinePassed)) throw error
    throw (request.met = new DependencyUnavailable(dependency, reasonOf(error), true, 'nothing'))
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
  /** When it last answered after failing: what was begun before then met the outage, not the dependency as it is now. */
  private lastRecovered = Number.NEGATIVE_INFINITY
  /**
   * The first failure since the last answer; `confirmed` once it is not one slow call alone (the
   * adapter could not reach the dependency, a probe failed, or another call failed too): only then are
   * other requests' calls refused before it is judged down. `unreachable`: one of the failures says the
   * dependency could not be reached; slow calls alone may be a burst queued behind each other on a busy
   * machine, so their refusals do not blame the dependency until it is judged down.
   */
  private failing: { since: number; confirmed: boolean; unreachable: boolean } | null = null
  /** The outage logged, whose end is not logged yet; `back`: when the dependency last came back. */
  private logged: { since: number; back: number | null } | null = null

  constructor(
    readonly name: DependencyName,
    private readonly log: DependencyLog,
    readonly clock: () => number = Date.now,
  ) {
    this.lastReachable = clock()
  }

  get reachable(): boolean {
    return this.down === null
  }

  /** Whether it answered anything in the last `ms`. */
  private answeredWithin(ms: number): boolean {
    return this.clock() - this.lastReachable < ms
  }

  /**
   * A probe that had no answer within PROBE_DEADLINE_MS. It takes the dependency down at once (a
   * frozen server answers nothing, and /readyz must follow within a second), unless the dependency
   * answered other calls in the second half of the probe's wait: a frozen server answers none after it
   * froze, while a busy machine's database answers others as one probe waits.
   */
  probeExpired(began: number): void {
    if (this.answeredWithin(PROBE_DEADLINE_MS / 2)) return
    this.failed(`no answer within ${PROBE_DEADLINE_MS} ms`, true, false, began)
  }

  /** A probe refused (its connection failed): certain, unless the dependency answered other calls meanwhile (see `judge`). */
  probeFailed(reason: string, began: number): void {
    if (this.lastReachable > began) return
    this.failed(reason, true, false, began)
  }

  answered(): void {
    const now = this.clock()
    this.lastReachable = now
    if (this.failing || this.down) this.lastRecovered = now
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
   * `began`: when the failed call or probe was made. A failure of one made before the dependency last
   * recovered (answered after failing) is old news and changes nothing: a connection attempt begun
   * during an outage that times out after the recovery, or a probe sent into a frozen server that
   * fails once it is back. One made while it was answering counts, whatever answered since: a server
   * that freezes answers the calls before it and none after.
   */
  failed(reason: string, certain = false, slow = false, began?: number): void {
    if (began !== undefined && began < this.lastRecovered) return
    const now = this.clock()
    if (this.failing) this.failing.confirmed = true
    else this.failing = { since: now, confirmed: certain || !slow, unreachable: false }
    this.failing.unreachable ||= certain || !slow
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
    return { name: this.name, reachable: this.reachable, seconds_since_reachable: (this.clock() - this.lastReachable) / 1000 }
  }

  /**
   * Runs one call to the dependency. Within a request (`asRequest`) the call is refused at once while
   * the dependency is down or its failure is confirmed (see `failing`), once the request met an outage
   * (named after that one) or ran out of time, and waits at most CALL_DEADLINE_MS and what is left of
   * the request's time. Elsewhere (projections, probes, commands) it runs unbounded. A failure that says
   * the dependency did not answer becomes this dependency's 503; any other outcome proves it answered.
   */
  async call<T>(work: () => Promise<T>): Promise<T> {
    const request = requests.getStore()
    const ms = request && this.allowance(request)
    const began = this.clock()
    try {
      const result = await (ms === undefined ? work() : beforeDeadline(work(), ms))
      this.answered()
      return result
    } catch (error) {
      // Only a passed deadline and the adapters' 503s are outages; a refusal (a conflict) is an answer.
      if (!(error instanceof DeadlinePassed) && !isUnavailable(error)) {
        this.answered()
        throw error
      }
      const refusal = this.judge(error, began)
      if (request) request.met ??= refusal
      throw refusal
    }
  }

  /** How long a request's call may wait, or its refusal before the call is made. */
  private allowance(request: RequestScope): number {
    // A confirmed `failing`: calls failed and none answered since; a call queued behind them (e.g. a
    // charge behind another of the same quota, src/briefings/ledger.ts) waited for that failure already.
    if (!request.met && (this.down || this.failing?.confirmed)) {
      const blamed = this.down !== null || this.failing!.unreachable
      request.met = new DependencyUnavailable(this.name, this.down?.reason ?? 'its last calls failed', false, blamed ? 'unreachable' : 'slow', blamed)
    }
    return allowance(request, this.name)
  }

  /**
   * What a failed call says: the 503 it answers, and what it tells of the dependency's state. A call
   * made inside another (the event store's over its database) keeps the inner refusal's evidence; one
   * cut short by its request's bound (`nothing`) tells nothing of the dependency. The answer names the
   * dependency when it could not be reached or is judged down (see `blamed`).
   */
  private judge(error: unknown, began: number): DependencyUnavailable {
    const sent = !(error instanceof DependencyUnavailable) || error.sent
    const evidence: Evidence =
      error instanceof DeadlinePassed ? (error.ms < CALL_DEADLINE_MS ? 'nothing' : 'slow') : error instanceof DependencyUnavailable ? error.evidence : 'unreachable'
    // A connection that failed while the dependency answered other calls is that connection's failure
    // (after a restart, postgres.js can keep one connection timing out at connect while the others
    // serve): the request is refused, the dependency neither blamed nor taken for failing.
    const connectionOnly =
      evidence === 'unreachable' && (this.lastReachable > began || (error instanceof DependencyUnavailable && error.evidence === 'unreachable' && !error.blamed))
    if (sent && evidence !== 'nothing' && !connectionOnly) this.failed(reasonOf(error), false, evidence === 'slow', began)
    const blamed = !connectionOnly && (evidence === 'unreachable' || (evidence === 'slow' && !this.reachable))
    return new DependencyUnavailable(this.name, reasonOf(error), sent, evidence, blamed)
  }
}

/** The shortest wait after a probe's deadline before it is judged: a timer, so that the runtime polls its sockets first. */
const READ_TURN_MS = 10

/**
 * Calls `judge` once PROBE_DEADLINE_MS have passed and then a short timer more, as long as this
 * process was late: on a busy machine the deadline's timer fires late, the probe's answer may be on
 * its socket unread, and the database was likely as starved of the processor as this process. So
 * the time the process lost is given back once (a frozen server answers none of it), and the timer
 * lets the runtime read its sockets before the probe is judged, on Bun as on Node.
 */
function afterProbeDeadline(judge: () => void): () => void {
  const due = performance.now() + PROBE_DEADLINE_MS
  let timer = setTimeout(() => {
    timer = setTimeout(judge, Math.max(READ_TURN_MS, performance.now() - due))
  }, PROBE_DEADLINE_MS)
  return () => clearTimeout(timer)
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
      const began = dependency.clock()
      const asked = probe()
      let settled = false
      const cancel = afterProbeDeadline(() => !settled && dependency.probeExpired(began))
      asked
        .then(
          () => dependency.answered(),
          (error) => dependency.probeFailed(reasonOf(error), began),
        )
        .finally(() => {
          settled = true
          cancel()
          pending.delete(dependency)
        })
    }
  }, PROBE_INTERVAL_MS)
  timer.unref?.()
  return { stop: () => clearInterval(timer) }
}
