import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { sleep } from '../support/eventually.ts'
import { type PrivatePostgres, type PrivateRedis, startPrivatePostgres, startPrivateRedis, unavailable } from '../support/private-services.ts'
import { type RunningServer, startServer, tempDataDir } from '../support/server.ts'

/**
 * The server under load while its PostgreSQL (events and read models) or its Redis (rate limits)
 * is stopped, frozen (SIGSTOP) and brought back: private servers on other ports, never the shared
 * ones. The contract (docs/errors.md, "When a dependency fails"): every request is answered within
 * REQUEST_BOUND_MS, with its normal answer or 503 JSON with Retry-After, never 500 nor a dropped
 * connection; /readyz turns 503 within a second of the outage and 200 within a second of the
 * recovery; the API serves again within a second, without a restart; retried with their
 * Idempotency-Key, the briefings refused meanwhile are answered, and every briefing is charged once.
 */

type Json = Record<string, any>

/** The documented bound (docs/errors.md): a request waits at most one call deadline (1 s) per dependency. */
const REQUEST_BOUND_MS = 2000
/** How soon /readyz and the API follow a recovery, and the API an outage. */
const FOLLOW_MS = 1000
/**
 * How soon /readyz turns 503 after an outage: a probe every 250 ms, each given 500 ms (a frozen server
 * answers nothing, so the probe waits out its deadline), judged once the process could have read its
 * answer, then the poller's 50 ms. 1046 ms was seen in a quiet CI run: the documented bound is 1.5 s.
 */
const READYZ_DOWN_MS = 1500
const OUTAGE_MS = 5000

const why = unavailable()
if (why) console.warn(`[skipped] outage suite: ${why}`)

type Answer = { kind: 'zones' | 'health' | 'briefing' | 'changes' | 'readyz'; start: number; end: number; status: number | null; error?: string; retryAfter: string | null; body: Json | null; key?: string; request?: Json }

/** Concurrent clients sending a mix of requests until stopped, and a /readyz poller every 50 ms. */
function startLoad(server: RunningServer, apiKey: string, round: string, clients = 6) {
  const answers: Answer[] = []
  const readyz: { start: number; end: number; status: number | null }[] = []
  let running = true
  let sent = 0
  const send = async (kind: Answer['kind']): Promise<Answer> => {
    const n = sent++
    const start = Date.now()
    const init: RequestInit & { headers: Record<string, string> } = { headers: { authorization: `Bearer ${apiKey}` }, signal: AbortSignal.timeout(15_000) }
    const paths = { zones: '/api/v1/zones', health: '/api/v1/health', changes: '/api/v1/listings/changes?limit=50', readyz: '/readyz' }
    let path = kind === 'briefing' ? '' : paths[kind]
    let key: string | undefined
    let request: Json | undefined
    if (kind === 'briefing') {
      key = `${round}-${n}`
      request = { zone: `Zona ${1 + (n % 10)}`, profile: 'balanced', budget_usd: 50_000 + n * 1000 + round.length }
      path = '/api/v1/briefings/investor'
      Object.assign(init, { method: 'POST', body: JSON.stringify(request) })
      Object.assign(init.headers, { 'content-type': 'application/json', 'idempotency-key': key })
    }
    try {
      const response = await fetch(`${server.url}${path}`, init)
      const text = await response.text()
      let body: Json | null = null
      try {
        body = JSON.parse(text) as Json
      } catch {
        body = { unparsable: text.slice(0, 200) }
      }
      return { kind, start, end: Date.now(), status: response.status, retryAfter: response.headers.get('retry-after'), body, key, request }
    } catch (error) {
      return { kind, start, end: Date.now(), status: null, error: String(error), retryAfter: null, body: null, key, request }
    }
  }
  const kinds: Answer['kind'][] = ['briefing', 'zones', 'briefing', 'health', 'changes']
  // Each client waits a little after a 503, as Retry-After asks (far less than it asks, to keep the pressure on).
  const workers = Array.from({ length: clients }, async (_, c) => {
    for (let i = c; running; i++) {
      const answer = await send(kinds[i % kinds.length]!)
      answers.push(answer)
      if (answer.status === 503) await sleep(100)
    }
  })
  const poller = (async () => {
    while (running) {
      const start = Date.now()
      const answer = await send('readyz')
      readyz.push({ start, end: answer.end, status: answer.status })
      answers.push(answer)
      await sleep(50)
    }
  })()
  return {
    answers,
    readyz,
    async stop() {
      running = false
      await Promise.all([...workers, poller])
    },
  }
}

/** What every answer under load must be: its normal answer or a prompt, honest 503. */
function expectHonestAnswers(answers: readonly Answer[], normal: (a: Answer) => boolean) {
  const problems = answers.filter((a) => {
    if (a.status === null || a.end - a.start > REQUEST_BOUND_MS) return true
    if (a.status === 503) {
      const b = a.body!
      return !(b.ok === false && b.error === 'service_unavailable' && typeof b.message === 'string' && !/\d+\.\d+\.\d+\.\d+|:\d{2,5}\b/.test(b.message) && Number(a.retryAfter) >= 1)
    }
    return !normal(a)
  })
  expect(problems.map((a) => ({ kind: a.kind, ms: a.end - a.start, status: a.status, error: a.error, retryAfter: a.retryAfter, body: a.body }))).toEqual([])
}

/** Runs `work` on every item, `width` at a time. */
async function inParallel<T>(items: readonly T[], work: (item: T) => Promise<void>, width = 8): Promise<void> {
  let next = 0
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < items.length) await work(items[next++]!)
  }))
}

const ok = (a: Answer) => a.status === 200 && a.body?.ok === true

describe.skipIf(why !== null)('outages of PostgreSQL and Redis under load (private servers)', () => {
  let pg: PrivatePostgres
  let redis: PrivateRedis
  let server: RunningServer
  let key = ''
  let admin = ''
  /** Every briefing answered 200, by Idempotency-Key, with its request. */
  const answered = new Map<string, { body: Json; request: Json }>()
  /** Briefings refused 503, to be retried with their key once the dependency is back. */
  const refused = new Map<string, Json>()
  const measures: Record<string, unknown> = {}

  beforeAll(async () => {
    ;[pg, redis] = await Promise.all([startPrivatePostgres(), startPrivateRedis()])
    server = await startServer({
      DATA_DIR: tempDataDir(),
      DATABASE_URL: pg.url,
      REDIS_URL: redis.url,
      DEMO_SEED: 'on',
      DEMO_LISTINGS: '400',
      ACCESS_LOG: 'off',
      QUOTA_ENTERPRISE: '100000',
      RATE_LIMIT_ENTERPRISE: '1000000',
    })
    const cli = async (...args: string[]) => {
      const result = await server.cli(...args, '--json')
      expect(result.code, result.stderr).toBe(0)
      return JSON.parse(result.stdout) as Json
    }
    await cli('owner', 'create', '--id', 'root', '--tier', 'admin')
    await cli('owner', 'create', '--id', 'acme', '--tier', 'enterprise')
    key = (await cli('key', 'issue', '--owner', 'acme', '--scopes', 'read,write', '--actor', 'root')).key
    admin = (await cli('key', 'issue', '--owner', 'root', '--scopes', 'read', '--actor', 'root')).key
    for (let i = 0; i < 200 && (await fetch(`${server.url}/api/v1/health`, { headers: { authorization: `Bearer ${key}` } })).status !== 200; i++) await sleep(50)
    for (let i = 0; i < 200 && (await fetch(`${server.url}/readyz`)).status !== 200; i++) await sleep(50)
  }, 120_000)

  afterAll(async () => {
    await server?.stop()
    await pg?.dispose()
    await redis?.dispose()
    console.info(`outage measures: ${JSON.stringify(measures)}`)
  })

  /** Runs the load around an outage; returns the answers and the times the outage began and ended. */
  async function outage(round: string, begin: () => Promise<void> | void, end: () => Promise<void> | void) {
    const logFrom = server.output().length
    const load = startLoad(server, key, round)
    await sleep(800)
    const beginning = Date.now()
    await begin()
    const begun = Date.now()
    await sleep(OUTAGE_MS)
    const ending = Date.now()
    await end()
    const ended = Date.now()
    await sleep(2500)
    await load.stop()
    for (const a of load.answers.filter((a) => a.kind === 'briefing')) {
      if (ok(a)) answered.set(a.key!, { body: a.body!, request: a.request! })
      else if (a.status === 503) refused.set(a.key!, a.request!)
    }
    const log = server.output().slice(logFrom)
    const worst = Math.max(...load.answers.map((a) => a.end - a.start))
    const firstReadyzDown = load.readyz.find((r) => r.start >= beginning && r.status === 503)
    const firstReadyzUp = load.readyz.find((r) => r.start >= ended && r.status === 200)
    // Served again: the first briefing sent after the recovery that is answered. When it was sent says
    // how soon the server served again; how long it took is the bound every answer keeps (a busy
    // machine's briefing may take a second of its own).
    const firstBriefingBack = load.answers.filter((a) => a.kind === 'briefing' && a.start >= ended && ok(a)).sort((a, b) => a.start - b.start)[0]
    measures[round] = {
      requests: load.answers.length,
      refused_503: load.answers.filter((a) => a.status === 503).length,
      worst_ms: worst,
      readyz_down_after_ms: firstReadyzDown && firstReadyzDown.end - begun,
      readyz_up_after_ms: firstReadyzUp && firstReadyzUp.end - ended,
      briefing_back_after_ms: firstBriefingBack && firstBriefingBack.start - ended,
      briefing_back_answered_in_ms: firstBriefingBack && firstBriefingBack.end - firstBriefingBack.start,
    }
    // What the briefings sent after the recovery were answered, for the message of a failure.
    const briefingsAfter = load.answers.filter((a) => a.kind === 'briefing' && a.start >= ended).map((a) => `+${a.start - ended} ms: ${a.status} ${a.body?.error ?? ''} ${a.body?.message ?? a.error ?? ''}`)
    const served = `briefings sent after the recovery:\n${briefingsAfter.join('\n')}`
    return { answers: load.answers, readyz: load.readyz, beginning, begun, ending, ended, log, firstReadyzDown, firstReadyzUp, firstBriefingBack, served }
  }

  /** /readyz 503 within READYZ_DOWN_MS of the outage and throughout it; 200 within FOLLOW_MS of the recovery. */
  function expectReadiness(run: Awaited<ReturnType<typeof outage>>) {
    expect(run.firstReadyzDown, 'a 503 from /readyz during the outage').toBeDefined()
    expect(run.firstReadyzDown!.end - run.begun).toBeLessThanOrEqual(READYZ_DOWN_MS)
    expect(run.readyz.filter((r) => r.start >= run.begun + READYZ_DOWN_MS && r.end <= run.ending).map((r) => r.status)).not.toContain(200)
    expect(run.firstReadyzUp, 'a 200 from /readyz after the recovery').toBeDefined()
    expect(run.firstReadyzUp!.end - run.ended).toBeLessThanOrEqual(FOLLOW_MS)
  }

  /** One line when each dependency went away, one when it came back. */
  function expectLoggedOnce(log: string, dependencies: string[]) {
    for (const dependency of dependencies) {
      const lines = (event: string) => log.split('\n').filter((l) => l.includes(`"event":"${event}"`) && l.includes(`"dependency":"${dependency}"`)).length
      expect({ dependency, down: lines('dependency_down'), up: lines('dependency_up') }).toEqual({ dependency, down: 1, up: 1 })
    }
    expect(log).not.toContain('unhandled_error')
  }

  /** /readyz followed the outage and the recovery, briefings were served again within a second, and `dependencies` logged once each. */
  function expectBackWithinASecond(run: Awaited<ReturnType<typeof outage>>, dependencies: string[]) {
    expectReadiness(run)
    expect(run.firstBriefingBack, run.served).toBeDefined()
    expect(run.firstBriefingBack!.start - run.ended, run.served).toBeLessThanOrEqual(FOLLOW_MS)
    expectLoggedOnce(run.log, dependencies)
  }

  test('PostgreSQL stopped for 5 s: reads from memory stay 200, the rest 503 at once; back within a second', async () => {
    const run = await outage('pg-stop', () => pg.stop(), () => pg.start())
    expectHonestAnswers(run.answers, ok)
    // Served from memory throughout.
    expect(run.answers.filter((a) => a.kind === 'zones').every(ok)).toBe(true)
    expect(run.answers.filter((a) => a.kind === 'briefing' && a.start > run.begun + FOLLOW_MS && a.end < run.ending).map((a) => a.status)).not.toContain(200)
    // The change feed reads the database: a prompt 503 while it is down, its pages before and after.
    const changes = run.answers.filter((a) => a.kind === 'changes')
    expect(changes.filter((a) => a.start > run.begun + FOLLOW_MS && a.end < run.ending).map((a) => a.status)).not.toContain(200)
    expect(changes.filter((a) => a.end < run.beginning && !ok(a)).map((a) => [a.status, a.body])).toEqual([])
    expectBackWithinASecond(run, ['read-model database', 'event store'])
  }, 60_000)

  test('PostgreSQL frozen (SIGSTOP) for 5 s: no request waits past the bound; back within a second of SIGCONT', async () => {
    const run = await outage('pg-freeze', () => pg.freeze(), () => pg.thaw())
    expectHonestAnswers(run.answers, ok)
    expect(run.answers.filter((a) => a.kind === 'zones').every(ok)).toBe(true)
    expectBackWithinASecond(run, ['read-model database', 'event store'])
  }, 60_000)

  test('Redis stopped, then frozen: counted requests 503 (never let through uncounted), back within a second', async () => {
    for (const [round, begin, end] of [
      ['redis-stop', () => redis.stop(), () => redis.start()],
      ['redis-freeze', () => redis.freeze(), () => redis.thaw()],
    ] as const) {
      const run = await outage(round, begin, end)
      expectHonestAnswers(run.answers, ok)
      // Only Redis is away: no refusal blames PostgreSQL (an operator paged would look in the wrong place).
      const blamed = run.answers.filter((a) => a.status === 503 && /event store|read-model database/.test(String(a.body?.message)))
      const states = run.log.split('\n').filter((line) => line.includes('"event":"dependency_')).join('\n')
      expect(blamed.map((a) => ({ kind: a.kind, at: a.start - run.begun, ms: a.end - a.start, body: a.body })), `the dependencies' log lines:\n${states}`).toEqual([])
      expectBackWithinASecond(run, ['rate limiter'])
    }
  }, 90_000)

  test('nothing lost, nothing charged twice: refused briefings retried with their key are answered; answers replay byte for byte', async () => {
    expect(refused.size, 'briefings refused during the outages').toBeGreaterThan(0)
    const post = async (k: string, request: Json) => {
      const response = await fetch(`${server.url}/api/v1/briefings/investor`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': k },
        body: JSON.stringify(request),
      })
      return { status: response.status, replayed: response.headers.get('idempotent-replayed') === 'true', body: (await response.json()) as Json }
    }
    // Refused ones: answered now (a key whose release waited for the store may answer 503 once more).
    await inParallel([...refused], async ([k, request]) => {
      let again = await post(k, request)
      for (let i = 0; i < 40 && again.status !== 200; i++) {
        await sleep(250)
        again = await post(k, request)
      }
      expect({ key: k, status: again.status }).toEqual({ key: k, status: 200 })
      if (!answered.has(k)) answered.set(k, { body: again.body, request })
    })
    // Answered ones: the same answer, marked as a replay (after a 503, which tells to retry, as a client would).
    await inParallel([...answered], async ([k, { body, request }]) => {
      let replay = await post(k, request)
      for (let i = 0; i < 8 && replay.status === 503; i++) {
        await sleep(250)
        replay = await post(k, request)
      }
      expect({ key: k, status: replay.status, replayed: replay.replayed, body: replay.body }).toEqual({ key: k, status: 200, replayed: true, body })
    })
    const briefingIds = new Set([...answered.values()].map(({ body }) => body.briefing_id as string))
    expect(briefingIds.size).toBe(answered.size)
    const sql = postgres(pg.url, { max: 1, onnotice: () => {} })
    try {
      const [row] = await sql<{ count: string }[]>`select count(*) from mirador_events where event_type = 'BriefingGenerated'`
      const count = row!.count
      const health = (await (await fetch(`${server.url}/api/v1/health`, { headers: { authorization: `Bearer ${key}` } })).json()) as Json
      measures.briefings = { answered_keys: answered.size, briefing_generated_events: Number(count), quota_used: health.quota.used, retried_after_503: refused.size }
      // Each key charged once, and only the briefings some key answered (no cache hits: every body differs).
      expect(Number(count)).toBe(answered.size)
      expect(health.quota.used).toBe(answered.size)
    } finally {
      await sql.end()
    }
    // The admin's /health tells each dependency's state from memory.
    const adminHealth = (await (await fetch(`${server.url}/api/v1/health`, { headers: { authorization: `Bearer ${admin}` } })).json()) as Json
    expect(adminHealth.dependencies.map((d: Json) => [d.name, d.reachable])).toEqual([
      ['event store', true],
      ['read-model database', true],
      ['rate limiter', true],
    ])
  }, 90_000)
})
