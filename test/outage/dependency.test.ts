import { DeadlineExceededError, UnavailableError } from '@kurrent/kurrentdb-client'
import { describe, expect, it } from 'vitest'
import { isWriteToClosedConnection, mapPostgresError } from '../../src/db/postgres.ts'
import { toPortError } from '../../src/eventstore/esdb-mapping.ts'
import { type EventStore, WrongExpectedRevision } from '../../src/eventstore/port.ts'
import { watchedEventStore } from '../../src/eventstore/watched.ts'
import { asRequest, Dependency, DependencyUnavailable } from '../../src/runtime/dependency.ts'
import { AppError } from '../../src/shared/errors.ts'

/**
 * The KurrentDB path of an outage, without a KurrentDB: the client's errors, through the adapter's
 * mapping (toPortError), reach the event store's watcher as they would from the real adapter. The
 * clock is the test's: no timing is measured here (test/outage/outage.test.ts measures, on real servers).
 */
function kurrentLike() {
  let failure: unknown = null
  let calls = 0
  const store = {
    batches: 'all-or-nothing',
    async headPosition() {
      calls++
      if (failure) throw toPortError(failure)
      return 42
    },
    async append(stream: string) {
      calls++
      if (failure) throw toPortError(failure)
      throw new WrongExpectedRevision(stream, 0, 3)
    },
  } as unknown as EventStore
  return {
    store,
    calls: () => calls,
    fail: (error: unknown) => void (failure = error),
    recover: () => void (failure = null),
  }
}

const bodyOf = (error: unknown) => (error as AppError).body()

describe('an event store outage, KurrentDB through its error mapping', () => {
  it('is a 503 naming the event store (never the address), logged once when it goes and once when it is back', async () => {
    let now = 0
    const logged: { event: string; fields: Record<string, unknown> }[] = []
    const dependency = new Dependency('event store', (event, fields) => logged.push({ event, fields }), () => now)
    const kurrent = kurrentLike()
    const store = watchedEventStore(kurrent.store, dependency)
    expect(await asRequest(() => store.headPosition())).toBe(42)

    kurrent.fail(new UnavailableError(undefined, '14 UNAVAILABLE: No connection established to 10.0.0.7:2113'))
    const first = await asRequest(() => store.headPosition()).catch((e: unknown) => e)
    expect(first).toBeInstanceOf(DependencyUnavailable)
    expect(bodyOf(first)).toEqual({ ok: false, error: 'service_unavailable', message: 'the event store is unavailable; retry in a moment' })
    expect((first as AppError).headers).toEqual({ 'Retry-After': '1' })
    expect((first as DependencyUnavailable).reason).toContain('10.0.0.7')
    // One failure is not yet an outage (a lost connection rejects its queries while others answer),
    // though the next requests do not wait for it: refused at once until something answers.
    expect(dependency.reachable).toBe(true)
    const calls = kurrent.calls()
    expect(bodyOf(await asRequest(() => store.headPosition()).catch((e: unknown) => e)).error).toBe('service_unavailable')
    expect(kurrent.calls()).toBe(calls)
    // Failures with no answer for half a second are an outage (here the projections' own calls,
    // which are not bounded); a deadline of KurrentDB's own counts the same.
    now = 600
    kurrent.fail(new DeadlineExceededError())
    await store.headPosition().catch(() => {})
    expect(dependency.reachable).toBe(false)
    expect(logged.map((l) => [l.event, l.fields.dependency])).toEqual([['dependency_down', 'event store']])

    // While down, a request does not wait for it: refused without a call.
    const before = kurrent.calls()
    for (let i = 0; i < 5; i++) expect(bodyOf(await asRequest(() => store.headPosition()).catch((e: unknown) => e)).error).toBe('service_unavailable')
    expect(kurrent.calls()).toBe(before)
    expect(logged).toHaveLength(1)

    // Back: the first answer (a probe, outside any request) serves requests again at once…
    kurrent.recover()
    now = 5_000
    expect(await store.headPosition()).toBe(42)
    expect(dependency.reachable).toBe(true)
    expect(await asRequest(() => store.headPosition())).toBe(42)
    // …and the return is logged once it has answered for a second.
    expect(logged).toHaveLength(1)
    now = 6_100
    await store.headPosition()
    expect(logged.map((l) => l.event)).toEqual(['dependency_down', 'dependency_up'])
    expect(logged[1]!.fields).toEqual({ dependency: 'event store', down_seconds: 4.4 })
    expect(dependency.state()).toEqual({ name: 'event store', reachable: true, seconds_since_reachable: 0 })
  })

  it('a refusal is an answer: a lost race passes unchanged and the store stays reachable', async () => {
    const dependency = new Dependency('event store', () => {})
    const store = watchedEventStore(kurrentLike().store, dependency)
    await expect(asRequest(() => store.append('owner-acme', [], 0))).rejects.toBeInstanceOf(WrongExpectedRevision)
    expect(dependency.reachable).toBe(true)
  })
})

describe('PostgreSQL failures as the read models see them', () => {
  it('connection failures are the read-model database being unavailable; an answer of the server is not', () => {
    for (const code of ['ECONNREFUSED', 'ECONNRESET', 'CONNECTION_CLOSED', 'CONNECT_TIMEOUT', '57P01', '57P03', '08006', '53300']) {
      const mapped = mapPostgresError(Object.assign(new Error(`failure ${code} at 127.0.0.1:5432`), { code }))
      expect(mapped, code).toBeInstanceOf(DependencyUnavailable)
      expect(bodyOf(mapped).message).toBe('the read-model database is unavailable; retry in a moment')
    }
    const duplicate = Object.assign(new Error('duplicate key'), { code: '23505' })
    expect(mapPostgresError(duplicate)).toBe(duplicate)
  })

  it("only postgres.js's write to a closed connection is recognised as that known defect", () => {
    const known = new TypeError("null is not an object (evaluating 'socket.write')")
    known.stack = `TypeError: ${known.message}\n    at nextWrite (/app/node_modules/postgres/src/connection.js:255:15)`
    expect(isWriteToClosedConnection(known)).toBe(true)
    const other = new TypeError("null is not an object (evaluating 'socket.write')")
    other.stack = `TypeError: ${other.message}\n    at send (/app/src/somewhere.ts:1:1)`
    expect(isWriteToClosedConnection(other)).toBe(false)
    expect(isWriteToClosedConnection(new Error('boom'))).toBe(false)
  })
})
