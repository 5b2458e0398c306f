import { existsSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, describe, expect, test } from 'vitest'
import { isolatedDatabaseUrl } from './databases.ts'
import { type FakeOpenAi, answer, startFakeOpenAi } from './fake-openai.ts'
import { type RunningServer, type Runtime, freePort, runCli, runServerToExit, serverCommand, startServer, tempDataDir } from './server.ts'

type Json = Record<string, any>

const REDIS_URL = process.env.REDIS_URL
const NAMES: Record<Runtime, string> = { bun: 'Bun', node: 'Node', deno: 'Deno' }
const good = { verdict: 'BUY', confidence: 'high', headline: 'Zona 1 looks cheap', body_md: '## Zona 1\n\nPrices are below the country median.' }
const modeOf = (path: string) => (statSync(path).mode & 0o777).toString(8)
/** The three runtimes start at once (vitest.config.ts): on a busy machine a start can take a minute or two. */
const START = { timeoutMs: 120_000 }
const STARTING_TEST_MS = 180_000

/**
 * The end-to-end smoke suite, the same on every runtime (test/e2e/smoke-<runtime>.test.ts): the real
 * server started with the runtime's command from package.json (`npm start`, `npm run start:node`,
 * `npm run start:deno`), driven by the operator CLI and over HTTP as a user would, with the embedded
 * store, Redis counters and the OpenAI writer (a local chat-completions server), then PostgreSQL.
 * Test titles carry the runtime's name; CI prints a line per runtime from them (.ci/run).
 */
export function smokeSuite(runtime: Runtime) {
  const name = NAMES[runtime]
  if (!REDIS_URL) console.warn(`[skipped] smoke on ${name}: the rate limit on Redis (REDIS_URL is not set; counters in memory)`)
  const databaseUrl = isolatedDatabaseUrl()
  if (!databaseUrl) console.warn(`[skipped] smoke on ${name} with PostgreSQL: DATABASE_URL is not set`)

  describe(`smoke on ${name} (${serverCommand(runtime).args.at(-1)})`, { timeout: STARTING_TEST_MS }, () => {
    const dataDir = tempDataDir(`mirador-smoke-${runtime}-`)
    let fake: FakeOpenAi
    let server: RunningServer | undefined
    let env: Record<string, string>
    let key = ''
    let proKey = ''
    let revokedKey = ''
    let revokedKeyId = ''
    let briefingId = ''
    const once = (path: string, init: RequestInit & { key?: string } = {}) =>
      fetch(`${server!.url}/api/v1${path}`, { ...init, headers: { authorization: `Bearer ${init.key ?? key}`, ...init.headers } })
    /**
     * A request as a client sends it: again after a 503, which a counted request gets when Redis
     * answers later than its 250 ms bound (src/ratelimit/redis.ts fails closed), as on a busy machine.
     */
    const call = async (path: string, init: RequestInit & { key?: string } = {}) => {
      for (let attempt = 1; ; attempt++) {
        const response = await once(path, init)
        if (response.status !== 503 || attempt === 5) return response
        await new Promise((r) => setTimeout(r, 200))
      }
    }
    const get = async (path: string, as = key) => {
      const response = await call(path, { key: as })
      return { status: response.status, body: (await response.json()) as Json, headers: response.headers }
    }
    const issue = async (owner: string, scopes: string) =>
      JSON.parse((await server!.cli('key', 'issue', '--owner', owner, '--scopes', scopes, '--actor', 'root', '--json')).stdout) as { key: string; key_id: string }
    const known = async (as: string) => {
      for (let i = 0; i < 100 && (await call('/health', { key: as })).status !== 200; i++) await new Promise((r) => setTimeout(r, 50))
    }
    const briefing = () =>
      call('/briefings/investor', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': `smoke-${runtime}-1` },
        body: JSON.stringify({ zone: 'Zona 1', profile: 'balanced', language: 'en' }),
      })

    const pgDataDir = tempDataDir(`mirador-smoke-${runtime}-pg-`)
    afterAll(async () => {
      await server?.stop()
      await fake?.close()
      for (const dir of [dataDir, pgDataDir]) rmSync(dir, { recursive: true, force: true })
    })

    test(`${name}: starts on an empty data directory (demo market seeded, private files, its runtime in the log)`, async () => {
      fake = await startFakeOpenAi()
      env = {
        DATA_DIR: dataDir,
        DEMO_SEED: 'on',
        DEMO_LISTINGS: '300',
        RATE_LIMIT_PRO: '3',
        OPENAI_API_KEY: 'sk-smoke',
        OPENAI_BASE_URL: fake.baseUrl,
        ...(REDIS_URL ? { REDIS_URL } : {}),
      }
      const metricsPort = await freePort()
      server = await startServer({ ...env, METRICS_PORT: String(metricsPort) }, { runtime, ...START })
      const listening = server.output().split('\n').find((line) => line.includes('"event":"listening"'))!
      expect(JSON.parse(listening)).toMatchObject({ runtime, store: `pglite:${dataDir}`, rate_limiter: REDIS_URL ? 'redis' : 'memory', operator_socket: join(dataDir, 'mirador.sock') })
      expect(server.output()).toContain('"event":"demo_seeded"')
      // The metrics name the runtime; Node's own metric names only on Node (elsewhere several would be wrong).
      const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()
      expect(metrics).toMatch(new RegExp(`^mirador_build_info\\{version="[^"]+",runtime="${runtime}"\\} 1$`, 'm'))
      expect(/^nodejs_version_info/m.test(metrics)).toBe(runtime === 'node')
      expect(metrics).toMatch(/^mirador_event_loop_lag_seconds /m)
      expect([modeOf(dataDir), modeOf(join(dataDir, 'mirador.lock')), modeOf(join(dataDir, 'mirador.sock')), modeOf(join(dataDir, 'pglite'))]).toEqual(['700', '600', '600', '700'])
    })

    test(`${name}: keys issued through the CLI over the server's socket open /health`, async () => {
      expect((await server!.cli('owner', 'create', '--id', 'root', '--tier', 'admin')).code).toBe(0)
      const created = await server!.cli('owner', 'create', '--id', 'acme', '--tier', 'enterprise')
      expect(created).toMatchObject({ code: 0, stdout: 'owner acme: tier enterprise, active\n', stderr: expect.stringContaining("via the server's socket") })
      expect((await server!.cli('owner', 'create', '--id', 'small', '--tier', 'pro')).code).toBe(0)
      key = (await issue('acme', 'read,write')).key
      proKey = (await issue('small', 'read')).key
      ;({ key: revokedKey, key_id: revokedKeyId } = await issue('acme', 'read'))
      await known(key)
      expect((await get('/health')).body).toMatchObject({ ok: true, service: 'mirador', tier: 'enterprise', owner_id: 'acme' })
      expect((await call('/health', { key: 'mrd_0000000000000000000000000000000000000' })).status).toBe(401)
    })

    test(`${name}: zones, a zone, listings and the personas`, async () => {
      const zones = await get('/zones?country=GT')
      expect(zones.status).toBe(200)
      expect(zones.body).toMatchObject({ ok: true, country: 'GT' })
      expect(zones.body.zones.length).toBeGreaterThanOrEqual(12)
      const slug = zones.body.zones[0].slug
      const zone = await get(`/zone/${slug}?country=GT`)
      expect(zone.status).toBe(200)
      expect(zone.body).toMatchObject({ ok: true })
      const listings = await get('/listings?country=GT&limit=5')
      expect(listings.status).toBe(200)
      expect(listings.body.listings).toHaveLength(5)
      const personas = await get('/briefings/personas')
      expect(personas.status).toBe(200)
      expect(personas.body.personas.map((p: Json) => p.id)).toContain('investor')
    })

    test(`${name}: HEAD of the probes and the docs is their GET without a body; a trailing slash is 404`, async () => {
      for (const path of ['/livez', '/readyz', '/docs']) {
        const head = await fetch(`${server!.url}${path}`, { method: 'HEAD' })
        expect(head.status, path).toBe(200)
        expect(await head.text(), path).toBe('')
        expect(Number(head.headers.get('content-length')), path).toBeGreaterThan(0)
        const slashed = await fetch(`${server!.url}${path}/`)
        expect(slashed.status, `${path}/`).toBe(404)
        expect(await slashed.json(), `${path}/`).toMatchObject({ ok: false, error: 'not_found' })
      }
    })

    test(`${name}: a briefing by the OpenAI writer, replayed under its Idempotency-Key`, async () => {
      fake.script(answer(good))
      const first = await briefing()
      const body = (await first.json()) as Json
      expect(first.status).toBe(200)
      expect(body).toMatchObject({ ok: true, persona: 'investor', verdict: 'BUY', cached: false, usage: { used: 1 } })
      expect(fake.requests.at(-1)!.authorization).toBe('Bearer sk-smoke')
      briefingId = body.briefing_id
      const calls = fake.requests.length
      const again = await briefing()
      expect(again.status).toBe(200)
      expect(again.headers.get('idempotent-replayed')).toBe('true')
      expect(await again.json()).toMatchObject({ briefing_id: briefingId, usage: { used: 1 } })
      expect(fake.requests.length).toBe(calls)
    })

    test(`${name}: the rate limit${REDIS_URL ? ' (Redis)' : ''} reaches 429`, async () => {
      await known(proKey)
      // `known` spent one of the 3 requests an hour of RATE_LIMIT_PRO (a 503 may have counted too).
      const statuses: number[] = []
      for (let i = 0; i < 10 && statuses.at(-1) !== 429; i++) {
        const { status } = await once('/zones?country=GT', { key: proKey })
        if (status !== 503) statuses.push(status)
      }
      expect(statuses.at(-1)).toBe(429)
      expect(statuses.slice(0, -1)).toEqual(statuses.slice(0, -1).map(() => 200))
      expect(statuses.length).toBeLessThanOrEqual(3)
      const refused = await get('/zones?country=GT', proKey)
      expect(refused.body).toMatchObject({ ok: false, error: 'rate_limit', limit: 3 })
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
    })

    test(`${name}: a key revoked through the CLI is refused`, async () => {
      await known(revokedKey)
      expect((await server!.cli('key', 'revoke', '--key-id', revokedKeyId, '--actor', 'root', '--reason', 'smoke')).code).toBe(0)
      for (let i = 0; i < 40 && (await call('/health', { key: revokedKey })).status !== 401; i++) await new Promise((r) => setTimeout(r, 25))
      expect((await get('/health', revokedKey)).body).toMatchObject({ ok: false, error: 'invalid_key' })
      expect((await get('/health')).status).toBe(200)
    })

    test(`${name}: a second server on the same data directory refuses to start`, async () => {
      const second = await runServerToExit({ ...env, PORT: String(await freePort()) }, runtime)
      expect(second.code).toBe(1)
      expect(second.stderr).toContain(`mirador: ${dataDir} is in use by another server`)
    })

    test(`${name}: SIGTERM loses no access-log line, and removes the socket and the lock`, async () => {
      const ids = Array.from({ length: 100 }, (_, i) => `smoke-${runtime}-${i}`)
      // Without a key (401): a burst of counted requests could meet Redis's 250 ms bound on a busy machine.
      const statuses = await Promise.all(ids.map(async (id) => (await fetch(`${server!.url}/api/v1/health`, { headers: { 'x-request-id': id } })).status))
      expect(new Set(statuses)).toEqual(new Set([401]))
      await server!.stop('SIGTERM')
      const entries = server!
        .output()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Json)
      const logged = entries.filter((entry) => entry.event === 'request' && String(entry.request_id).startsWith(`smoke-${runtime}-`))
      expect(logged.map((entry) => entry.request_id).sort()).toEqual([...ids].sort())
      expect(entries).toContainEqual(expect.objectContaining({ event: 'stopping', signal: 'SIGTERM' }))
      expect(entries.at(-1)).toMatchObject({ event: 'stopped', signal: 'SIGTERM' })
      expect([existsSync(join(dataDir, 'mirador.sock')), existsSync(join(dataDir, 'mirador.lock'))]).toEqual([false, false])
    })

    test(`${name}: a restart on the existing data keeps keys, the revocation and the briefing`, async () => {
      server = await startServer(env, { runtime, ...START })
      expect(server.output()).not.toContain('"event":"demo_seeded"')
      expect((await get('/health')).status).toBe(200)
      expect((await get('/health', revokedKey)).status).toBe(401)
      const again = await briefing()
      expect(again.headers.get('idempotent-replayed')).toBe('true')
      expect(await again.json()).toMatchObject({ briefing_id: briefingId })
    })

    test.runIf(databaseUrl)(`${name}: on PostgreSQL, a key issued by the CLI on the database opens /health`, async () => {
      await server!.stop()
      const pgEnv = { DATA_DIR: pgDataDir, DATABASE_URL: databaseUrl! }
      server = await startServer(pgEnv, { runtime, ...START })
      expect(server.output()).toContain('"store":"postgres"')
      const cli = (...args: string[]) => runCli(args, pgEnv)
      expect((await cli('owner', 'create', '--id', 'root', '--tier', 'admin')).code).toBe(0)
      key = (JSON.parse((await cli('key', 'issue', '--owner', 'root', '--scopes', 'read', '--actor', 'root', '--json')).stdout) as { key: string }).key
      await known(key)
      expect((await get('/health')).body).toMatchObject({ ok: true, owner_id: 'root', tier: 'admin' })
    })
  })
}
