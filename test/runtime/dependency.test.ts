import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { asRequest, CALL_DEADLINE_MS, Dependency, DependencyUnavailable, sharedCall } from '../../src/runtime/dependency.ts'

/**
 * What one request's failed call does to the other requests' calls. Deadlines run on fake timers and
 * the dependency's clock is the test's: nothing is timed, only who is answered and who is refused.
 */

const never = () => new Promise<never>(() => {})
const answers = async () => 'answered'

/** Settles `promise` with the fake clock advanced by `ms`; its rejection is returned, not thrown. */
async function after<T>(ms: number, promise: Promise<T>): Promise<T | unknown> {
  const settled = promise.catch((error: unknown) => error)
  await vi.advanceTimersByTimeAsync(ms)
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
