import { beforeAll, describe, expect, test } from 'vitest'
import { eventually, sleep } from '../support/eventually.ts'
import type { RunningServer } from '../support/server.ts'
import { serverPair } from '../support/server-pair.ts'

/**
 * `key roll` on the real servers (`bun src/main.ts`), two processes sharing one PostgreSQL and one
 * Redis, administered through the operator CLI: the old key answers on both until its grace ends,
 * then `invalid_key` on both, with no event at that moment and no restart.
 */

const { DATABASE_URL, REDIS_URL } = process.env
const GRACE_S = 15

if (!DATABASE_URL || !REDIS_URL) console.warn('[skipped] key roll across two server processes: needs DATABASE_URL and REDIS_URL')

describe.skipIf(!DATABASE_URL || !REDIS_URL)('key roll across two server processes on PostgreSQL and Redis', () => {
  const { servers, keyIds, cli } = serverPair('roll', DATABASE_URL!, REDIS_URL!, { RATE_LIMIT_ENTERPRISE: '50' })

  const health = async (server: RunningServer, key: string) => {
    const response = await fetch(`${server.url}/api/v1/health`, { headers: { authorization: `Bearer ${key}` }, signal: AbortSignal.timeout(5_000) })
    const body = (await response.json()) as { error?: string }
    return { status: response.status, error: body.error ?? null, remaining: response.headers.get('x-ratelimit-remaining') }
  }

  beforeAll(async () => {
    await cli('owner', 'create', '--id', 'root', '--tier', 'admin')
    await cli('owner', 'create', '--id', 'acme', '--tier', 'enterprise')
  })

  test(`both keys answer on both servers during a ${GRACE_S} s grace; within a second of its end the old one is invalid_key on both`, async () => {
    const old = await cli<{ key: string; key_id: string }>('key', 'issue', '--owner', 'acme', '--scopes', 'read', '--actor', 'acme')
    keyIds.push(old.key_id)
    for (const server of servers) await eventually(`${server.url} knows the key`, async () => (await health(server, old.key)).status === 200)

    const rolled = await cli<{ key: string; key_id: string; rolled_from: string; grace_ends_at: string }>(
      'key', 'roll', '--key-id', old.key_id, '--grace', `${GRACE_S}s`, '--actor', 'acme',
    )
    keyIds.push(rolled.key_id)
    expect(rolled.rolled_from).toBe(old.key_id)
    const graceEnd = Date.parse(rolled.grace_ends_at)
    for (const server of servers) await eventually(`${server.url} knows the successor`, async () => (await health(server, rolled.key)).status === 200)

    // During the grace: both keys on both servers, each key with its own hourly count (shared in Redis).
    expect(Date.now()).toBeLessThan(graceEnd - 1000)
    const during = []
    for (const server of servers) during.push(await health(server, old.key), await health(server, rolled.key))
    expect(during.map((r) => r.status)).toEqual([200, 200, 200, 200])
    const remaining = async (server: RunningServer, key: string) => Number((await health(server, key)).remaining)
    const [oldBefore, newBefore] = [await remaining(servers[0]!, old.key), await remaining(servers[1]!, rolled.key)]
    await health(servers[0]!, rolled.key)
    expect([await remaining(servers[1]!, old.key), await remaining(servers[0]!, rolled.key)]).toEqual([oldBefore - 1, newBefore - 2])

    // After the grace end: polled on both servers until both refuse; how long after the end it took.
    await sleep(Math.max(0, graceEnd - Date.now() - 200))
    const refusedAfter: number[] = []
    await Promise.all(
      servers.map((server) =>
        eventually(`${server.url} refuses the old key`, async () => {
          const r = await health(server, old.key)
          if (r.status !== 401) return false
          expect(r.error).toBe('invalid_key')
          refusedAfter.push(Date.now() - graceEnd)
          return true
        }, 5_000),
      ),
    )
    console.info(`old key refused ${refusedAfter.join(' ms, ')} ms after the grace end (servers a, b in order of refusal)`)
    for (const ms of refusedAfter) expect(ms).toBeLessThan(1000)
    for (const server of servers) expect(await health(server, rolled.key)).toMatchObject({ status: 200 })

    // The audit tells the same story; the plaintext keys are in no server's output.
    const audit = await cli<{ state: { valid: boolean; rolled_to: string }; linked: { key_id: string; relation: string }[] }>('audit', 'key', old.key_id)
    expect(audit.state).toMatchObject({ valid: false, rolled_to: rolled.key_id })
    expect(audit.linked).toEqual([expect.objectContaining({ key_id: rolled.key_id, relation: 'successor' })])
    for (const server of servers) for (const key of [old.key, rolled.key]) expect(server.output()).not.toContain(key)
  })

  test('key revoke ends a grace early, on both servers', async () => {
    const old = await cli<{ key: string; key_id: string }>('key', 'issue', '--owner', 'acme', '--scopes', 'read', '--actor', 'root')
    const rolled = await cli<{ key: string; key_id: string }>('key', 'roll', '--key-id', old.key_id, '--grace', '24h', '--actor', 'root')
    keyIds.push(old.key_id, rolled.key_id)
    for (const server of servers) await eventually(`${server.url} knows the old key`, async () => (await health(server, old.key)).status === 200)
    await cli('key', 'revoke', '--key-id', old.key_id, '--actor', 'acme', '--reason', 'rotation done')
    for (const server of servers) await eventually(`${server.url} refuses the revoked key`, async () => (await health(server, old.key)).status === 401, 2_000)
    for (const server of servers) await eventually(`${server.url} serves the successor`, async () => (await health(server, rolled.key)).status === 200)
  })
})
