import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { formatApiKey } from '../../src/domain/keys/api-key.ts'
import { eventually } from '../support/eventually.ts'
import { EXAMPLE_WEBHOOK_ID, OPERATIONS } from '../support/operations.ts'
import { type RawResponse, rawRequest } from '../support/raw-http.ts'
import { initialisedDataDir, type RunningServer, startServer } from '../support/server.ts'

/**
 * The gate as an attacker meets it: the real server (Bun, demo market), requests written byte for
 * byte over TCP. Whatever the request target, Host header or key, an answer without a valid
 * in-scope, in-limit key is one of the contract's errors: JSON, `ok: false`, X-Request-Id, never
 * data and never 5xx.
 */

type Route = { method: 'GET' | 'POST' | 'DELETE'; path: string; body?: string; streamed: boolean; okStatus: number }
/** A request of each operation of the API that a valid key gets data from. */
const ROUTES: Route[] = OPERATIONS.map(({ method, path, body, streamed, okStatus }) => ({ method, path, body, streamed, okStatus }))
/** The body of a briefing, sent with every generated POST. */
const BRIEFING_BODY = ROUTES.find((route) => route.method === 'POST')!.body

/** Ways of writing a route's request target that a router and a gate could read differently. */
const TARGET_FORMS: [string, (target: string) => string][] = [
  ['as written', (t) => t],
  ['double leading slash', (t) => `/${t}`],
  ['double inner slash', (t) => t.replace('/api/v1/', '/api/v1//')],
  ['dot segment', (t) => t.replace('/api/v1/', '/api/v1/./')],
  ['dot-dot segment', (t) => `/x/..${t}`],
  ['encoded slashes', (t) => `/${t.slice(1).replaceAll('/', '%2F')}`],
  ['encoded inner slash', (t) => t.replace('/api/v1/', '/api/v1%2F')],
  ['prefixed', (t) => `/x${t}`],
  ['trailing slash', (t) => t.replace(/(\?|$)/, '/$1')],
  ['absolute form', (t) => `http://ab${t}`],
  ['absolute form with a prefix', (t) => `http://ab/d${t}`],
  ['fragment', (t) => `${t}#x`],
]

/** Host headers (null: HTTP/1.0 without one). */
const HOST_FORMS: (string | null)[] = ['127.0.0.1', 'abc', 'ab', 'a', '', 'a/b', 'a?b', 'a b', 'a@b', 'x'.repeat(300), null]

const CONTRACT_ERRORS = new Set([
  'auth_required',
  'invalid_key',
  'tier_required',
  'scope_denied',
  'rate_limit',
  'invalid_request',
  'not_found',
  'method_not_allowed',
  'payload_too_large',
])

function requestText(method: string, target: string, host: string | null, authorization: string | null, body = '') {
  const lines = [`${method} ${target} ${host === null ? 'HTTP/1.0' : 'HTTP/1.1'}`]
  if (host !== null) lines.push(`Host: ${host}`)
  if (authorization !== null) lines.push(`Authorization: ${authorization}`)
  if (body) lines.push('Content-Type: application/json', `Content-Length: ${Buffer.byteLength(body)}`)
  return { head: lines.join('\r\n'), body }
}

/** The contract's error: JSON envelope, stable code, X-Request-Id, a 4xx status. Returns the code. */
function expectContractError(response: RawResponse, what: string): string {
  expect(response.status, what).toBeGreaterThanOrEqual(400)
  expect(response.status, what).toBeLessThan(500)
  expect(response.headers.get('x-request-id'), what).toBeTruthy()
  expect(response.headers.get('content-type'), what).toMatch(/^application\/json/)
  const body = JSON.parse(response.body) as { ok: unknown; error: string; message: unknown }
  expect(body.ok, what).toBe(false)
  expect(CONTRACT_ERRORS.has(body.error), `${what}: ${body.error}`).toBe(true)
  expect(typeof body.message, what).toBe('string')
  return body.error
}

/** The OpenAPI document, the /docs page and its assets, or `GET /` pointing to them, which need no key. */
const isPublicDescription = (response: RawResponse) =>
  /^text\/(html|css|javascript)/.test(response.headers.get('content-type') ?? '') ||
  response.body.startsWith('{"openapi":"3.1.0"') ||
  response.body === '{"service":"mirador","docs":"/docs","openapi":"/api/v1/openapi.json"}'

/** Runs `work` over `items`, `width` at a time. */
async function inParallel<T>(items: readonly T[], width: number, work: (item: T) => Promise<void>) {
  let next = 0
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) await work(items[next++]!)
    }),
  )
}

describe('the gate of the real server, over raw TCP', () => {
  let server: RunningServer
  const authorization: Record<string, string> = {}

  const issue = async (owner: string, scopes: string, actor: string) => {
    const issued = await server.cli('key', 'issue', '--owner', owner, '--scopes', scopes, '--actor', actor, '--json')
    expect(issued.code, issued.stderr).toBe(0)
    return JSON.parse(issued.stdout) as { key: string; key_id: string }
  }

  beforeAll(async () => {
    server = await startServer({ DATA_DIR: initialisedDataDir(), DEMO_SEED: 'on', DEMO_LISTINGS: '112', RATE_LIMIT_PRO: '1', ACCESS_LOG: 'off' })
    for (const [id, tier] of [['root', 'admin'], ['acme', 'enterprise'], ['revokee', 'enterprise'], ['cheap', 'pro'], ['busy', 'pro'], ['reader', 'pro']]) {
      expect((await server.cli('owner', 'create', '--id', id!, '--tier', tier!)).code).toBe(0)
    }
    authorization.valid = `Bearer ${(await issue('acme', 'read,write', 'acme')).key}`
    const revoked = await issue('revokee', 'read,write', 'revokee')
    expect((await server.cli('key', 'revoke', '--key-id', revoked.key_id, '--actor', 'revokee')).code).toBe(0)
    authorization.revoked = `Bearer ${revoked.key}`
    authorization.free = `Bearer ${(await issue('cheap', 'read,write', 'root')).key}`
    expect((await server.cli('owner', 'set-tier', '--id', 'cheap', '--tier', 'free', '--actor', 'root')).code).toBe(0)
    authorization.overLimit = `Bearer ${(await issue('busy', 'read,write', 'root')).key}`
    authorization.readOnly = `Bearer ${(await issue('reader', 'read', 'root')).key}`
    authorization.malformed = `Bearer ${formatApiKey('A'.repeat(32)).slice(0, -1)}x`
    const health = async (key: string) => (await fetch(`${server.url}/api/v1/health`, { headers: { authorization: key } })).status
    await eventually('the revocation and the downgrade reach the server', async () => (await health(authorization.revoked!)) === 401 && (await health(authorization.free!)) === 403)
  })
  afterAll(() => server?.stop())

  const send = (route: Route, target: string, host: string | null, key: string | null, keepOpen = false) => {
    const { head, body } = requestText(route.method, target, host === '127.0.0.1' ? `127.0.0.1:${server.port}` : host, key, route.body)
    return rawRequest(server.port, head, body, 10_000, keepOpen)
  }

  /** The pro key's limit is 1 an hour: one request first makes sure the probe meets a spent counter. */
  const spendOverLimitKey = () => send(ROUTES[0]!, ROUTES[0]!.path, '127.0.0.1', authorization.overLimit!)

  test('control: a valid key on each route as written gets data (so the probes below could find it)', async () => {
    // A webhook's routes answer for one that exists: made first (the example URL is never called).
    // Kept open, as every request below: its answer comes after the store's statements, which let the
    // event loop turn (decision 0126), and Bun drops the answer to a half-closed connection.
    const made = await send(ROUTES.find((r) => r.method === 'POST' && r.path.endsWith('/webhooks'))!, '/api/v1/webhooks', '127.0.0.1', authorization.valid!, true)
    const webhookId = (JSON.parse(made.body) as { webhook: { id: string } }).webhook.id
    for (const route of ROUTES) {
      const path = route.path.replace(EXAMPLE_WEBHOOK_ID, webhookId)
      // Kept open: a ping waits on the network, and Bun drops the answer to a half-closed connection.
      const response = await send(route, path, '127.0.0.1', authorization.valid!, true).catch((error: Error) => {
        throw new Error(`${route.method} ${path}: ${error.message}`)
      })
      expect(response.status, path).toBe(route.okStatus)
      // A streamed export is NDJSON: listings, then the cursor line.
      const answer = route.streamed ? JSON.parse(response.body.trimEnd().split('\n').at(-1)!) : JSON.parse(response.body)
      expect(answer).toMatchObject(route.streamed ? { cursor: expect.stringMatching(/^c1\./) } : { ok: true })
    }
  })

  const cases = ROUTES.flatMap((route) =>
    TARGET_FORMS.flatMap(([form, write]) => HOST_FORMS.map((host) => ({ route, form, target: write(route.path), host }))),
  )

  test.each([
    ['no key', null, ['auth_required']],
    ['a malformed key', 'malformed', ['invalid_key']],
    ['a revoked key', 'revoked', ['invalid_key']],
    ['a free-tier key', 'free', ['tier_required']],
    ['a pro key over its hourly limit', 'overLimit', ['rate_limit']],
  ] as const)('every route × target form × Host with %s: the contract error, never data', async (_name, kind, gateErrors) => {
    const allowed = new Set<string>([...gateErrors, 'not_found', 'invalid_request'])
    await inParallel(cases, 8, async ({ route, form, target, host }) => {
      if (kind === 'overLimit') await spendOverLimitKey()
      const response = await send(route, target, host, kind === null ? null : authorization[kind]!)
      const what = `${route.method} ${JSON.stringify(target)} (${form}), Host ${JSON.stringify(host)}`
      const error = expectContractError(response, what)
      expect(allowed.has(error), `${what}: ${error}`).toBe(true)
    })
  })

  test('every write route × target form × Host with a read-only key: scope_denied or another contract error, never a briefing or a webhook', async () => {
    const writes = cases.filter(({ route }) => route.method !== 'GET')
    await inParallel(writes, 8, async ({ route, form, target, host }) => {
      const response = await send(route, target, host, authorization.readOnly!)
      const what = `${route.method} ${JSON.stringify(target)} (${form}), Host ${JSON.stringify(host)}`
      const error = expectContractError(response, what)
      // Unknown paths under /api/v1 need any valid key and count toward its (spent) hourly limit.
      expect(['scope_denied', 'not_found', 'invalid_request', 'method_not_allowed', 'rate_limit'], `${what}: ${error}`).toContain(error)
    })
  })

  test('request lines that are not HTTP are answered by the HTTP parser before the API sees them: no data', async () => {
    for (const [line, status] of [
      ['GET %2Fapi%2Fv1%2Fzones HTTP/1.1', 400],
      ['GET api/v1/zones HTTP/1.1', 400],
      ['GET * HTTP/1.1', 400],
      ['GET /api/v1/zones HTTP/1.1 x', 505],
    ] as const) {
      const response = await rawRequest(server.port, `${line}\r\nHost: a`)
      expect(response.status, line).toBe(status)
      expect(response.body, line).toBe('')
    }
  })

  test('an HTTP/1.1 request without Host gets exactly what the README says: Bun\'s bare 400, no body, no X-Request-Id; HTTP/1.0 gets the JSON envelope', async () => {
    const readme = readFileSync(join(import.meta.dirname, '../../README.md'), 'utf8').replace(/\s+/g, ' ')
    expect(readme).toContain('An HTTP/1.1 request with no `Host` header at all never reaches the API: Bun\'s HTTP parser answers it with a bare `400 Bad Request`, no body, no `X-Request-Id`, and closes the connection')
    for (const path of ['/api/v1/zones', '/api/v1/health', '/docs', '/']) {
      const bare = await rawRequest(server.port, `GET ${path} HTTP/1.1`)
      expect(bare.status, path).toBe(400)
      expect(bare.body, path).toBe('')
      expect(bare.headers.has('x-request-id'), path).toBe(false)
      expect(bare.headers.get('connection'), path).toBe('close')
      const old = await rawRequest(server.port, `GET ${path} HTTP/1.0`)
      expect(old.status, path).toBe(400)
      expect(JSON.parse(old.body), path).toMatchObject({ ok: false, error: 'invalid_request', details: [{ field: 'host' }] })
      expect(old.headers.get('x-request-id'), path).toBeTruthy()
    }
  })

  test('2,000 generated request targets and Host headers: never data without a valid key, never 5xx, always the JSON envelope', async () => {
    // Mostly mutations of real routes (where a second reading of the URL would hide), some noise.
    const slash = fc.constantFrom('/', '/', '/', '//', '/./', '/x/../', '%2F', '%2f', '/%2E/')
    const routePath = fc
      .tuple(fc.constantFrom(...ROUTES.map((route) => route.path.split('?')[0]!.slice(1).split('/'))), fc.array(slash, { minLength: 4, maxLength: 4 }))
      .map(([segments, joints]) => segments.reduce((path, segment, i) => `${path}${i === 0 ? '/' : joints[i - 1]}${segment}`, ''))
    const noise = fc.array(fc.stringMatching(/^[A-Za-z0-9._~!$&'()*+,;=:@%-]{0,12}$/), { maxLength: 6 }).map((parts) => `/${parts.join('/')}`)
    const prefix = fc.constantFrom('', '', '', '/', '/x', '//', '/..', 'http://ab', 'http://ab/d', 'http://a', 'http://abc/')
    const suffix = fc.constantFrom('', '', '/', '?country=PA', '/?x=1', '#f', '%00', '/..', '.json')
    const target = fc
      .tuple(prefix, fc.oneof({ weight: 4, arbitrary: routePath }, { weight: 1, arbitrary: noise }), suffix)
      .map(([before, path, after]) => `${before}${path}${after}`)
      .filter((written) => written.startsWith('/') || written.startsWith('http://'))
    const host = fc.oneof(
      fc.constant(null),
      fc.constantFrom('127.0.0.1', 'a', '', 'a/b', 'a?b', 'a b', 'a@b', 'a#b', 'a\\b', '[::1]', 'a:1'),
      fc.stringMatching(/^[a-z]{0,12}$/),
      fc.stringMatching(/^[!-~ ]{0,40}$/),
    )
    const key = fc.constantFrom(null, 'malformed', 'revoked', 'free', 'overLimit')
    const method = fc.constantFrom('GET', 'POST', 'HEAD', 'PUT', 'DELETE', 'OPTIONS')
    let runs = 0
    await fc.assert(
      fc.asyncProperty(method, target, host, key, async (verb, written, hostHeader, kind) => {
        runs += 1
        if (kind === 'overLimit') await spendOverLimitKey()
        const route: Route = verb === 'POST' ? { method: 'POST', path: written, body: BRIEFING_BODY, streamed: false, okStatus: 200 } : { method: 'GET', path: written, streamed: false, okStatus: 200 }
        const { head, body } = requestText(verb, written, hostHeader === '127.0.0.1' ? `127.0.0.1:${server.port}` : hostHeader, kind === null ? null : authorization[kind]!, route.body)
        const response = await rawRequest(server.port, head, body)
        const what = `${verb} ${JSON.stringify(written)}, Host ${JSON.stringify(hostHeader)}, key ${kind}`
        // The API's self-description is public: the only 200 a request without a valid key may get.
        if (response.status === 200 && isPublicDescription(response)) return
        if (verb === 'HEAD') {
          if (response.status === 200) {
            // A public path (the probes, the docs) answers HEAD: only where its GET answers public content.
            const got = await rawRequest(server.port, requestText('GET', written, hostHeader === '127.0.0.1' ? `127.0.0.1:${server.port}` : hostHeader, kind === null ? null : authorization[kind]!).head)
            expect(response.body, what).toBe('')
            expect(got.status === 200 && (isPublicDescription(got) || got.body === '{"ok":true}'), `${what}: its GET is ${got.status} ${got.body.slice(0, 80)}`).toBe(true)
            return
          }
          expect(response.status, what).toBeGreaterThanOrEqual(400)
          expect(response.status, what).toBeLessThan(500)
          expect(response.headers.get('x-request-id'), what).toBeTruthy()
          return
        }
        expectContractError(response, what)
      }),
      { numRuns: 2000 },
    )
    expect(runs).toBe(2000)
  })
})
