import { rm } from 'node:fs/promises'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { freePort, initialisedDataDir, type RunningServer, startServer } from '../support/server.ts'
import { cliJson, serverPair } from '../support/server-pair.ts'

/**
 * Rate limits on the real server (`bun src/main.ts`), configured only through its environment and
 * administered only through the operator CLI, as in production.
 */

const { DATABASE_URL, REDIS_URL } = process.env

type Json = Record<string, unknown>

const health = (server: RunningServer, key?: string) =>
  fetch(`${server.url}/api/v1/health`, {
    headers: key ? { authorization: `Bearer ${key}` } : {},
    // Fails the request, and so the test, if the server does not answer promptly.
    signal: AbortSignal.timeout(5_000),
  })

const countStatuses = (statuses: number[]) => {
  const counts: Record<number, number> = {}
  for (const s of statuses) counts[s] = (counts[s] ?? 0) + 1
  return counts
}

if (!DATABASE_URL || !REDIS_URL) {
  console.warn('[skipped] rate limits across two server processes: needs DATABASE_URL and REDIS_URL')
}

describe.skipIf(!DATABASE_URL || !REDIS_URL)('two server processes sharing one Redis and one PostgreSQL', () => {
  const { servers, keyIds: issuedKeyIds, cli } = serverPair('rl', DATABASE_URL!, REDIS_URL!, { RATE_LIMIT_ENTERPRISE: '5' })

  beforeAll(async () => {
    await cli('owner', 'create', '--id', 'root', '--tier', 'admin')
    await cli('owner', 'create', '--id', 'buyer', '--tier', 'pro')
    await cli('owner', 'create', '--id', 'ent', '--tier', 'enterprise')
  })

  /** Issues a read-only key through the CLI and waits until both servers know it. */
  async function issueKey(owner: string): Promise<string> {
    const issued = await cli<{ key: string; key_id: string }>('key', 'issue', '--owner', owner, '--scopes', 'read', '--actor', 'root')
    issuedKeyIds.push(issued.key_id)
    // A write-scoped route answers 403 scope_denied once a server knows the key (401 before), and a
    // denied request is not counted, so waiting spends nothing of the hour's allowance.
    for (const server of servers) {
      const deadline = Date.now() + 10_000
      for (;;) {
        const probe = await fetch(`${server.url}/api/v1/briefings/investor`, {
          method: 'POST',
          headers: { authorization: `Bearer ${issued.key}`, 'content-type': 'application/json' },
          body: '{}',
        })
        if (probe.status === 403) break
        if (Date.now() > deadline) throw new Error(`${server.url} did not pick up ${issued.key_id}: ${probe.status}`)
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    }
    return issued.key
  }

  // Slow on purpose: 20 rounds of 105 requests on two servers, a fresh key each (over a minute on a busy machine); nothing here measures time.
  test('105 concurrent requests with one pro key, split across both servers: exactly 100 × 200 and 5 × 429, 20 times over', async () => {
    const hourOf = (ms: number) => Math.floor(ms / 3_600_000)
    for (let round = 0; round < 20; round++) {
      const key = await issueKey('buyer')
      const startedAt = Date.now()
      const responses = await Promise.all(Array.from({ length: 105 }, (_, i) => health(servers[i % 2]!, key)))
      // The servers run on the real clock: a burst that straddles a UTC hour is split between two windows.
      if (hourOf(startedAt) !== hourOf(Date.now())) {
        round--
        continue
      }
      const perServer = servers.map((_, s) => countStatuses(responses.filter((_, i) => i % 2 === s).map((r) => r.status)))
      expect({ round, statuses: countStatuses(responses.map((r) => r.status)) }).toEqual({ round, statuses: { 200: 100, 429: 5 } })
      // Each server answered 52 or 53 of them, so both allowed some: the count really is shared.
      for (const counts of perServer) expect(counts[200]).toBeGreaterThan(0)
      for (const r of responses.filter((r) => r.status === 429)) {
        expect(await r.json()).toMatchObject({ ok: false, error: 'rate_limit', limit: 100, used: 100 })
        expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0)
      }
      const remaining = responses.filter((r) => r.status === 200).map((r) => Number(r.headers.get('x-ratelimit-remaining')))
      expect(remaining.sort((a, b) => a - b)).toEqual(Array.from({ length: 100 }, (_, i) => i))
    }
  }, 180_000)

  test('RATE_LIMIT_ENTERPRISE from the environment sets the enterprise limit, shared by both servers', async () => {
    const key = await issueKey('ent')
    const seen: Array<[number, string | null]> = []
    for (let i = 0; i < 6; i++) {
      const response = await health(servers[i % 2]!, key)
      seen.push([response.status, response.headers.get('x-ratelimit-remaining')])
      expect(response.headers.get('x-ratelimit-limit')).toBe('5')
    }
    expect(seen).toEqual([
      [200, '4'],
      [200, '3'],
      [200, '2'],
      [200, '1'],
      [200, '0'],
      [429, '0'],
    ])
  })
})

describe('Redis unavailable: a server pointed at a dead Redis port', () => {
  let server: RunningServer
  let proKey: string
  let adminKey: string
  let dataDir: string

  beforeAll(async () => {
    dataDir = initialisedDataDir('mirador-rl-dead-')
    // Embedded PGlite and memory for everything but the counters: only Redis is missing.
    server = await startServer({ DATA_DIR: dataDir, REDIS_URL: `redis://127.0.0.1:${await freePort()}` })
    await cliJson(server, 'owner', 'create', '--id', 'root', '--tier', 'admin')
    await cliJson(server, 'owner', 'create', '--id', 'buyer', '--tier', 'pro')
    proKey = (await cliJson<{ key: string }>(server, 'key', 'issue', '--owner', 'buyer', '--scopes', 'read', '--actor', 'root')).key
    adminKey = (await cliJson<{ key: string }>(server, 'key', 'issue', '--owner', 'root', '--scopes', 'read', '--actor', 'root')).key
  })
  afterAll(async () => {
    await server?.stop()
    if (dataDir) await rm(dataDir, { recursive: true, force: true })
  })

  test('rate-limited requests fail closed: prompt 503 service_unavailable with Retry-After, and the server keeps serving', async () => {
    // The CLI wrote through the server's socket, so the server knows the keys already.
    const responses = await Promise.all(Array.from({ length: 10 }, () => health(server, proKey)))
    for (const response of responses) {
      expect(response.status).toBe(503)
      expect(response.headers.get('content-type')).toContain('application/json')
      expect(response.headers.get('retry-after')).toBe('5')
      expect(await response.json()).toEqual({ ok: false, error: 'service_unavailable', message: expect.any(String) })
    }

    // Checks before the limiter still answer as usual, and admin keys never touch the counters.
    expect((await health(server)).status).toBe(401)
    const admin = await health(server, adminKey)
    expect(admin.status).toBe(200)
    expect(((await admin.json()) as Json).rate_limit).toBeNull()

    // Still alive and still refusing; the outage is logged once, not once per request.
    expect((await health(server, proKey)).status).toBe(503)
    expect(server.output().match(/"event":"dependency_down","dependency":"rate limiter"/g)).toHaveLength(1)
  })
})
