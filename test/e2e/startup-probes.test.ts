import { createServer, type Server, type Socket, connect } from 'node:net'
import { afterAll, describe, expect, test } from 'vitest'
import { uniqueSchema } from '../support/databases.ts'
import { type RunningServer, startServer, tempDataDir } from '../support/server.ts'

/**
 * The probes while a real server starts (README, "Health checks"): /livez answers 200 from the first
 * moment the port is open, so that an orchestrator's liveness probe does not kill a slow start;
 * /readyz answers 503 (JSON, Retry-After) until the server is ready, then 200.
 */
type Probe = { status: number; body: Record<string, unknown>; retryAfter: string | null }

async function probe(server: RunningServer, path: string): Promise<Probe> {
  const response = await fetch(`${server.url}${path}`)
  return { status: response.status, body: (await response.json()) as Record<string, unknown>, retryAfter: response.headers.get('retry-after') }
}

/** `probe`, or undefined while nothing accepts connections on the port yet. */
const probeIfOpen = (server: RunningServer, path: string) => probe(server, path).catch(() => undefined)

const listening = (server: RunningServer) => server.output().includes('"event":"listening"')

/** After the start: /readyz turns 200 once the health monitor has measured (within a second or so); /livez stays 200. */
async function expectReadyAfterStart(server: RunningServer) {
  await server.listened
  let ready = await probe(server, '/readyz')
  for (let i = 0; i < 200 && ready.status !== 200; i++) {
    await new Promise((r) => setTimeout(r, 50))
    ready = await probe(server, '/readyz')
  }
  expect(ready).toMatchObject({ status: 200, body: { ok: true } })
  expect(await probe(server, '/livez')).toMatchObject({ status: 200, body: { ok: true } })
}

const STARTING = { ok: false, error: 'service_unavailable', message: 'not ready: the server is starting' }

/**
 * A TCP proxy to PostgreSQL that holds every connection until `release()`: a server whose
 * DATABASE_URL points at it has its port open (the port is taken before the store is opened) and
 * cannot finish its start while the proxy holds. postgres.js gives a connection 2 s to be ready.
 */
async function gatedProxy(target: URL) {
  const held: (() => void)[] = []
  const sockets = new Set<Socket>()
  let open = false
  const server: Server = createServer((client) => {
    sockets.add(client)
    const pass = () => {
      const upstream = connect(Number(target.port || 5432), target.hostname)
      sockets.add(upstream)
      client.on('error', () => upstream.destroy())
      upstream.on('error', () => client.destroy())
      client.pipe(upstream).pipe(client)
    }
    if (open) pass()
    else held.push(pass)
  })
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
  return {
    port: (server.address() as { port: number }).port,
    held: () => held.length,
    release() {
      open = true
      for (const pass of held.splice(0)) pass()
    },
    close() {
      for (const socket of sockets) socket.destroy()
      server.close()
    },
  }
}

describe('/livez and /readyz while the server starts', () => {
  const servers: RunningServer[] = []
  /** Closed once the servers have stopped (a proxy's sockets are a server's connections). */
  const proxies: { close(): void }[] = []
  afterAll(async () => {
    for (const server of servers) await server.stop()
    for (const proxy of proxies) proxy.close()
  })

  const databaseUrl = process.env.DATABASE_URL
  if (!databaseUrl) console.warn('[skipped] the start held at its database: DATABASE_URL is not set')
  test.runIf(databaseUrl)('held at its database: /livez 200, /readyz 503 starting with Retry-After, the API 503; both 200 after', async () => {
    const target = new URL(databaseUrl!)
    const proxy = await gatedProxy(target)
    proxies.push(proxy)
    try {
      const url = new URL(databaseUrl!)
      url.host = `127.0.0.1:${proxy.port}`
      url.searchParams.set('search_path', uniqueSchema('startup'))
      const server = await startServer({ DATABASE_URL: url.toString(), DEMO_SEED: 'off' }, { untilListening: false })
      servers.push(server)
      // The server reaches its database after it opened its port: from then on its start waits for the proxy.
      for (let i = 0; i < 600 && proxy.held() === 0; i++) await new Promise((r) => setTimeout(r, 25))
      expect(proxy.held(), server.output()).toBeGreaterThan(0)

      expect(await probe(server, '/livez')).toEqual({ status: 200, body: { ok: true }, retryAfter: null })
      expect(await probe(server, '/readyz')).toEqual({ status: 503, body: STARTING, retryAfter: '1' })
      const api = await probe(server, '/api/v1/zones')
      expect(api).toMatchObject({ status: 503, body: { ok: false, error: 'service_unavailable' }, retryAfter: '1' })
      expect(listening(server)).toBe(false)

      proxy.release()
      await expectReadyAfterStart(server)
    } finally {
      proxy.release()
    }
  })

  // Slow on purpose: a first start runs initdb and seeds the demo market (seconds on a quiet machine, over a minute on a busy one).
  test('a first start on an empty data directory (initdb, demo seed): /livez is never anything but 200; /readyz 503 while it starts', async () => {
    const server = await startServer({ DATA_DIR: tempDataDir(), DEMO_SEED: 'on', DEMO_LISTINGS: '1000' }, { untilListening: false })
    servers.push(server)
    const seen: { path: string; answer: Probe; listening: boolean }[] = []
    while (!listening(server)) {
      for (const path of ['/livez', '/readyz']) {
        const before = listening(server)
        const answer = await probeIfOpen(server, path)
        if (answer) seen.push({ path, answer, listening: before })
      }
      await new Promise((r) => setTimeout(r, 20))
    }
    expect(seen.filter((s) => s.path === '/livez' && s.answer.status !== 200)).toEqual([])
    // Seen before the start was over (the port is open from its first steps; initdb alone takes
    // seconds). Not every answer before the `listening` line: the API serves, and may be ready,
    // before that line is written (the log is written in batches).
    const starting = seen.filter((s) => s.path === '/readyz' && !s.listening).map((s) => s.answer)
    expect(starting).toContainEqual({ status: 503, body: STARTING, retryAfter: '1' })
    await expectReadyAfterStart(server)
  }, 180_000)
})
