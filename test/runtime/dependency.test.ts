import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { asRequest, CALL_DEADLINE_MS, Dependency, DependencyUnavailable, REQUEST_BUDGET_MS, sharedCall, unbounded } from '../../src/runtime/dependency.ts'
import type { AppError } from '../../src/shared/errors.ts'

/**
 * What one request's failed call does to the other requests' calls. Deadlines run on fake timers and
 * the dependency's clock is the test's: nothing is timed, only who is answered and who is refused.
 */

const never = () => new Promise<never>(() => {})
const answers = async () => 'answered'

/**
 * Settles `promise` with the fake clock advanced by `ms`, and one more millisecond: a deadline is judged
 * a turn of the event loop after it passes (`beforeDeadline`). Its rejection is returned, not thrown.
 */
async function after<T>(ms: number, promise: Promise<T>): Promise<T | unknown> {
  const settled = promise.catch((error: unknown) => error)
  await vi.advanceTimersByTimeAsync(ms)
  await vi.advanceTimersByTimeAsync(1)
  return settled
}

describe('a dependency under one slow call', () => {
  let now = 0
  let logged: string[] = []
  let dependency: Dependency
  beforeEach(() => {
    vi.useFakeTimers()
    now = 0
    logged = []
    dependency = new Dependency('event store', (event) => logged.push(event), () => now)
  })
  afterEach(() => {
    vi.useRealTimers()
  })

  it('refuses no other request for one call that missed its deadline; a second failure before any answer does', async () => {
    const slow = await after(CALL_DEADLINE_MS, asRequest(() => dependency.call(never)))
    expect(slow).toBeInstanceOf(DependencyUnavailable)
    // Another request at the same moment reaches the dependency and is answered.
    let reached = 0
    const call = () => asRequest(() => dependency.call(() => (reached++, answers())))
    expect(await call()).toBe('answered')
    expect(reached).toBe(1)

    // Two slow calls with no answer between them: the next request is refused without a call.
    await after(CALL_DEADLINE_MS, asRequest(() => dependency.call(never)))
    now = 100
    await after(CALL_DEADLINE_MS, asRequest(() => dependency.call(never)))
    expect(((await call().catch((e: unknown) => e)) as DependencyUnavailable).sent).toBe(false)
    expect(reached).toBe(1)
    // Not down yet (the failures last less than half a second), so nothing is logged.
    expect(dependency.reachable).toBe(true)
    expect(logged).toEqual([])
  })

  it('a failure the adapter reports (unreachable) refuses the next requests at once, as before', async () => {
    const unreachable = () => Promise.reject(new DependencyUnavailable('event store', 'ECONNREFUSED 127.0.0.1:5432'))
    await expect(asRequest(() => dependency.call(unreachable))).rejects.toBeInstanceOf(DependencyUnavailable)
    let reached = 0
    const refused = await asRequest(() => dependency.call(() => (reached++, answers()))).catch((e: unknown) => e)
    expect(refused).toMatchObject({ sent: false })
    expect(reached).toBe(0)
  })

  it('a call cut short by its request having spent its budget says nothing of the dependency', async () => {
    // One request waits 900 ms for a first call, then has 600 ms left for the next, which misses it.
    const spent = asRequest(async () => {
      await dependency.call(() => new Promise((resolve) => setTimeout(resolve, 900)))
      return dependency.call(never)
    })
    expect(await after(1500, spent)).toMatchObject({ evidence: 'nothing', sent: true })
    // Twice, even: the other requests are served, the dependency never taken for failing.
    await after(1500, asRequest(async () => (await dependency.call(() => new Promise((resolve) => setTimeout(resolve, 900))), dependency.call(never))))
    expect(await asRequest(() => dependency.call(answers))).toBe('answered')
    expect(dependency.reachable).toBe(true)
  })

  it('a call made inside another call of the same request is counted once against its budget', async () => {
    // An append (event store) over its database: 800 ms for both, not 1600 ms.
    const database = new Dependency('read-model database', () => {}, () => now)
    const request = asRequest(async () => {
      await dependency.call(() => database.call(() => new Promise((resolve) => setTimeout(resolve, 800))))
      return dependency.call(answers)
    })
    expect(await after(800, request)).toBe('answered')
  })

  it('a request waiting for work shared with others waits within its own budget; the shared work is not its call', async () => {
    let finish: (value: string) => void = () => {}
    const shared = new Promise<string>((resolve) => (finish = resolve))
    // A request that already spent 900 ms waits at most its last 600 ms, and fails alone.
    const late = asRequest(async () => {
      await dependency.call(() => new Promise((resolve) => setTimeout(resolve, 900)))
      return sharedCall('event store', shared)
    })
    expect(await after(1500, late)).toMatchObject({ evidence: 'nothing', dependency: 'event store' })
    const fresh = asRequest(() => sharedCall('event store', shared))
    finish('stored')
    expect(await fresh).toBe('stored')
    expect(await asRequest(() => dependency.call(answers))).toBe('answered')
  })
})

/** What `promise` has come to once the fake clock advanced by `ms` (and the deadline's extra turn): its value, its rejection, or 'still waiting'. */
async function within<T>(ms: number, promise: Promise<T>): Promise<T | unknown> {
  const settled = promise.catch((error: unknown) => error)
  await vi.advanceTimersByTimeAsync(ms)
  await vi.advanceTimersByTimeAsync(1)
  return Promise.race([settled, Promise.resolve('still waiting')])
}

const messageOf = (refusal: unknown) => (refusal as DependencyUnavailable).body().message

describe("a request's time, and the dependency a refusal names", () => {
  let now = 0
  beforeEach(() => {
    vi.useFakeTimers()
    now = 0
  })
  afterEach(() => {
    vi.useRealTimers()
  })

  it('is counted on the wall from the request\'s start: time spent outside calls (a queue, a busy CPU) leaves less for the next call', async () => {
    const database = new Dependency('read-model database', () => {}, () => now)
    // 1.2 s waiting in a queue of other requests, then a call the database answers in 0.5 s.
    const request = asRequest(async () => {
      await new Promise((resolve) => setTimeout(resolve, 1200))
      return database.call(() => new Promise((resolve) => setTimeout(resolve, 500, 'answered')))
    })
    const outcome = await within(REQUEST_BUDGET_MS, request)
    expect(outcome).toBeInstanceOf(DependencyUnavailable)
    // It names no dependency: the database answered nothing late, the request ran out of time.
    expect(messageOf(outcome)).toBe('the server could not answer in time; retry in a moment')
    expect((outcome as AppError).headers).toEqual({ 'Retry-After': '1' })
    expect(database.reachable).toBe(true)
  })

  it("does not count a briefing writer's time, which has a timeout of its own", async () => {
    const database = new Dependency('read-model database', () => {}, () => now)
    const request = asRequest(async () => {
      await unbounded(() => new Promise((resolve) => setTimeout(resolve, 5000)))
      return database.call(() => new Promise((resolve) => setTimeout(resolve, 500, 'answered')))
    })
    expect(await within(5500, request)).toBe('answered')
  })

  it('names the dependency that failed the request, not the next one the request calls', async () => {
    const database = new Dependency('read-model database', () => {}, () => now)
    const events = new Dependency('event store', () => {}, () => now)
    const refusal = await asRequest(async () => {
      await database.call(() => Promise.reject(new DependencyUnavailable('read-model database', 'ECONNREFUSED 127.0.0.1:6432'))).catch(() => {})
      return events.call(answers)
    }).catch((error: unknown) => error)
    expect(messageOf(refusal)).toBe('the read-model database is unavailable; retry in a moment')
    expect(refusal).toMatchObject({ sent: false })
  })

  it('a request refused while a dependency is down names it', async () => {
    const limiterLike = new Dependency('read-model database', () => {}, () => now)
    limiterLike.failed('ECONNREFUSED', true)
    expect(messageOf(await asRequest(() => limiterLike.call(answers)).catch((e: unknown) => e))).toBe('the read-model database is unavailable; retry in a moment')
  })
})

/** The read-model database as a dependency on the test's clock (`at`), and the lines it logged. */
function database() {
  let now = 0
  const logged: string[] = []
  const dependency = new Dependency('read-model database', (event) => logged.push(event), () => now)
  return { dependency, logged, at: (ms: number) => void (now = ms) }
}

describe('failures that are old news', () => {
  it('a stumbling recovery is one outage: no second pair of lines', () => {
    const { dependency, logged, at } = database()
    dependency.failed('ECONNREFUSED', true)
    at(5_000)
    dependency.answered()
    at(5_300)
    dependency.failed('CONNECT_TIMEOUT', true)
    at(5_400)
    dependency.answered()
    at(6_500)
    dependency.answered()
    expect(logged).toEqual(['dependency_down', 'dependency_up'])
  })

  it('a call begun during an outage that fails after the recovery changes nothing (a connection opened during the outage, timing out after it)', async () => {
    const { dependency, logged, at } = database()
    dependency.failed('ECONNREFUSED', true)
    at(50)
    let timeOut: (error: unknown) => void = () => {}
    const straggler = dependency.call(() => new Promise((_, reject) => (timeOut = reject)))
    // The database is back: it answers the probes (outside any request), then requests…
    at(100)
    expect(await dependency.call(answers)).toBe('answered')
    at(1200)
    expect(await asRequest(() => dependency.call(answers))).toBe('answered')
    // …and then the straggler's connection attempt times out.
    at(2000)
    timeOut(new DependencyUnavailable('read-model database', 'CONNECT_TIMEOUT 127.0.0.1:6432'))
    await expect(straggler).rejects.toBeInstanceOf(DependencyUnavailable)
    // The next request is not refused, and the outage was one: down, then up.
    expect(await asRequest(() => dependency.call(answers))).toBe('answered')
    expect(dependency.reachable).toBe(true)
    expect(logged).toEqual(['dependency_down', 'dependency_up'])
  })

  it('a probe sent just before a server froze counts when it fails, though the server answered others after it was sent', () => {
    const { dependency, at } = database()
    // Calls in flight when the server froze are answered; nothing after.
    at(20)
    dependency.answered()
    at(500)
    dependency.failed('no answer within 500 ms', true, false, 0)
    expect(dependency.reachable).toBe(false)
  })

  it('a connection that fails while the dependency answers others is that connection\'s failure: refused, the dependency not blamed nor failing', async () => {
    const { dependency, logged, at } = database()
    let timeOut: (error: unknown) => void = () => {}
    const stuck = asRequest(() => dependency.call(() => new Promise((_, reject) => (timeOut = reject))))
    at(100)
    expect(await asRequest(() => dependency.call(answers))).toBe('answered')
    at(300)
    timeOut(new DependencyUnavailable('read-model database', 'CONNECT_TIMEOUT 127.0.0.1:6432'))
    const refusal = await stuck.catch((e: unknown) => e)
    expect(messageOf(refusal)).toBe('the server could not answer in time; retry in a moment')
    // The next request is served: one connection's failure says nothing of the database.
    expect(await asRequest(() => dependency.call(answers))).toBe('answered')
    expect(dependency.reachable).toBe(true)
    expect(logged).toEqual([])
  })

  it("the probe's own connection failing while the dependency answers others does not take it down", () => {
    const { dependency, at } = database()
    at(100)
    dependency.answered()
    at(2000)
    dependency.probeFailed('CONNECT_TIMEOUT 127.0.0.1:6432', 0)
    expect(dependency.reachable).toBe(true)
    // Refused with nothing answered since it was sent: the dependency is down.
    dependency.probeFailed('ECONNREFUSED 127.0.0.1:6432', 2100)
    expect(dependency.reachable).toBe(false)
  })

  it('a probe that waits in vain takes the dependency down, unless it answered others while the probe waited (a busy machine, not a frozen server)', () => {
    /** Whether the dependency is reachable after a probe sent at 0 expires at 500, its last answer at `answeredAt`. */
    const afterProbeExpired = (answeredAt: number) => {
      const { dependency, at } = database()
      at(answeredAt)
      dependency.answered()
      at(500)
      dependency.probeExpired(0)
      return dependency.reachable
    }
    // Frozen: its last answer before the second half of the wait.
    expect(afterProbeExpired(200)).toBe(false)
    // Busy: it answered others while the probe waited.
    expect(afterProbeExpired(300)).toBe(true)
  })

  it('a probe sent into a frozen server that fails once the server is back does not take it down again', () => {
    const { dependency, logged, at } = database()
    dependency.failed('no answer within 500 ms', true)
    const probeBegan = 4000
    at(5000)
    dependency.answered()
    at(6100)
    dependency.answered()
    at(6200)
    dependency.failed('CONNECT_TIMEOUT', true, false, probeBegan)
    expect(dependency.reachable).toBe(true)
    expect(logged).toEqual(['dependency_down', 'dependency_up'])
  })
})

describe('a slow dependency, as the client is told', () => {
  beforeEach(() => vi.useFakeTimers())
  afterEach(() => vi.useRealTimers())

  it('slow calls are the server not answering in time; once the dependency is judged down, it is named', async () => {
    const now = 0
    const events = new Dependency('event store', () => {}, () => now)
    // Calls with no answer in their whole second: a busy machine, a burst queued on the append lock, a long transaction.
    expect(messageOf(await within(CALL_DEADLINE_MS, asRequest(() => events.call(never))))).toBe('the server could not answer in time; retry in a moment')
    expect(messageOf(await within(CALL_DEADLINE_MS, asRequest(() => events.call(never))))).toBe('the server could not answer in time; retry in a moment')
    // Refused at once meanwhile (calls failed and none answered since), still without blaming the store.
    expect(messageOf(await asRequest(() => events.call(answers)).catch((e: unknown) => e))).toBe('the server could not answer in time; retry in a moment')
    // Its probe goes unanswered: the store is down, and the client is told which.
    events.failed('no answer within 500 ms', true)
    expect(messageOf(await asRequest(() => events.call(answers)).catch((e: unknown) => e))).toBe('the event store is unavailable; retry in a moment')
  })
})
