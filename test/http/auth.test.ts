import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { formatApiKey } from '../../src/domain/keys/api-key.ts'
import { Elysia } from 'elysia'
import { apiFeatures, buildApp } from '../../src/app.ts'
import { declaredAccess } from '../../src/http/gate.ts'
import { memoryRateLimiter } from '../../src/ratelimit/memory.ts'
import { systemClock } from '../../src/shared/random.ts'
import { type TestSystem, startTestSystem } from '../support/app.ts'
import { databaseTargets } from '../support/databases.ts'
import { OPERATIONS } from '../support/operations.ts'

/** The operations of the API, each with its scope (`POST /briefings/{persona}` is one path per persona). */
const CONTRACT = OPERATIONS.map(({ method, route, scope }) => ({ method, path: route, scope }))

for (const target of databaseTargets('HTTP auth')) {
  describe(`auth over HTTP (${target.name})`, () => {
    let system: TestSystem
    let enterprise: { key: string; keyId: string }
    let readOnly: { key: string; keyId: string }
    let writeOnly: { key: string; keyId: string }

    beforeAll(async () => {
      system = await startTestSystem(await target.open())
      enterprise = await system.ownerWithKey('acme', 'enterprise')
      readOnly = await system.ownerWithKey('reader', 'pro', ['read'])
      writeOnly = await system.ownerWithKey('writer', 'pro', ['write'])
    })
    afterAll(() => system.close())

    const body = async (response: Response) => (await response.json()) as Record<string, unknown>

    test('Elysia serves the operations of the API, each declaring its scope, and each answers 401 auth_required without a key', async () => {
      const scoped = system.app.routes
        .filter((route) => ['read', 'write'].includes(declaredAccess(route) ?? ''))
        .map((route) => ({ method: route.method, path: route.path, scope: declaredAccess(route) }))
      expect(scoped).toEqual(expect.arrayContaining(CONTRACT))
      expect(scoped).toHaveLength(CONTRACT.length)
      for (const route of system.app.routes) expect(declaredAccess(route), `${route.method} ${route.path}`).toBeDefined()
      for (const operation of OPERATIONS) {
        const response = await system.request(operation.path, { method: operation.method })
        expect(response.status, `${operation.method} ${operation.route}`).toBe(401)
        expect(await body(response)).toMatchObject({ ok: false, error: 'auth_required' })
      }
    })

    test('a route added without a declared scope stops the app from being built', () => {
      const deps = {
        keys: system.keys,
        limiter: memoryRateLimiter(),
        limits: { pro: 100, enterprise: 1000 },
        clock: systemClock,
        log: { info() {}, error() {} },
        accessLog: false,
        zones: system.zones,
        inventory: system.inventory,
        feed: system.feed,
        briefings: system.briefings,
        webhooks: system.webhooks,
        quota: system.quota,
      }
      const forgotten = new Elysia().get('/forgotten', () => ({ ok: true, secret: 'data' }))
      expect(() => buildApp(deps, (gate) => [...apiFeatures(deps, gate), forgotten])).toThrow(
        /routes without a declared access: GET \/api\/v1\/forgotten/,
      )
      expect(() => buildApp(deps)).not.toThrow()
    })

    test('a valid key reads /health with the fields of the contract', async () => {
      const response = await system.request('/api/v1/health', { key: enterprise.key })
      expect(response.status).toBe(200)
      expect(await body(response)).toMatchObject({
        ok: true,
        service: 'mirador',
        version: 'v1',
        tier: 'enterprise',
        key_id: enterprise.keyId,
        owner_id: 'acme',
        scopes: ['read', 'write'],
        rate_limit: { limit: 1000, used: 1, remaining: 999 },
        quota: { used: 0, quota: 500, unlimited: false },
      })
    })

    test.each([
      ['no header', undefined, 401, 'auth_required'],
      ['empty header', '', 401, 'auth_required'],
      ['another scheme', 'Basic dXNlcjpwYXNz', 401, 'auth_required'],
      ['Bearer without a key', 'Bearer', 401, 'auth_required'],
      ['a key of the wrong shape', 'Bearer mrd_short', 401, 'invalid_key'],
      ['a made-up key with a valid checksum', `Bearer ${formatApiKey('A'.repeat(32))}`, 401, 'invalid_key'],
    ])('%s → %d %s', async (_name, header, status, code) => {
      const headers: Record<string, string> = header === undefined ? {} : { authorization: header }
      const response = await system.request('/api/v1/health', { headers })
      expect(response.status).toBe(status)
      const json = await body(response)
      expect(json).toMatchObject({ ok: false, error: code })
      expect(typeof json.message).toBe('string')
    })

    test('a key with one character changed fails its checksum → 401 invalid_key', async () => {
      const flipped = enterprise.key.slice(0, 10) + (enterprise.key[10] === 'a' ? 'b' : 'a') + enterprise.key.slice(11)
      const response = await system.request('/api/v1/health', { key: flipped })
      expect(response.status).toBe(401)
      expect(await body(response)).toMatchObject({ error: 'invalid_key' })
    })

    test('the scheme is case-insensitive and the error never echoes the key', async () => {
      const ok = await system.request('/api/v1/health', { headers: { authorization: `bearer ${enterprise.key}` } })
      expect(ok.status).toBe(200)
      const bad = await system.request('/api/v1/health', { headers: { authorization: `Bearer ${enterprise.key}x` } })
      expect(await bad.text()).not.toContain(enterprise.key)
    })

    test('a revoked key → 401 invalid_key', async () => {
      const { key, keyId } = await system.ownerWithKey('revokee', 'enterprise')
      expect((await system.request('/api/v1/health', { key })).status).toBe(200)
      await system.run('key revoke', { key_id: keyId, actor: 'revokee', reason: 'lost laptop' })
      await system.settle()
      const response = await system.request('/api/v1/health', { key })
      expect(response.status).toBe(401)
      expect(await body(response)).toMatchObject({ error: 'invalid_key' })
    })

    test('an inactive owner → 401 invalid_key; reactivated → 200 again', async () => {
      const { key } = await system.ownerWithKey('sleepy', 'pro')
      await system.run('owner deactivate', { id: 'sleepy', actor: 'root' })
      await system.settle()
      expect(await body(await system.request('/api/v1/health', { key }))).toMatchObject({ error: 'invalid_key' })
      await system.run('owner activate', { id: 'sleepy', actor: 'root' })
      await system.settle()
      expect((await system.request('/api/v1/health', { key })).status).toBe(200)
    })

    test('an owner downgraded to free → 403 tier_required', async () => {
      const { key } = await system.ownerWithKey('cheap', 'free')
      const response = await system.request('/api/v1/health', { key })
      expect(response.status).toBe(403)
      expect(await body(response)).toMatchObject({ ok: false, error: 'tier_required' })
    })

    test('a key without the needed scope → 403 scope_denied (read route, write route)', async () => {
      const read = await system.request('/api/v1/health', { key: writeOnly.key })
      expect(read.status).toBe(403)
      expect(await body(read)).toMatchObject({ error: 'scope_denied' })
      const write = await system.request('/api/v1/briefings/investor', {
        key: readOnly.key,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      })
      expect(write.status).toBe(403)
      expect(await body(write)).toMatchObject({ error: 'scope_denied' })
    })

    test('auth is checked before the route: unknown paths answer 401 without a key, 404 not_found with one', async () => {
      expect((await system.request('/api/v1/nowhere')).status).toBe(401)
      const response = await system.request('/api/v1/nowhere', { key: enterprise.key })
      expect(response.status).toBe(404)
      expect(await body(response)).toMatchObject({ ok: false, error: 'not_found' })
    })

    test('a known path with the wrong method → 405 method_not_allowed with Allow', async () => {
      const response = await system.request('/api/v1/health', { key: enterprise.key, method: 'DELETE' })
      expect(response.status).toBe(405)
      expect(response.headers.get('allow')).toBe('GET')
      expect(await body(response)).toMatchObject({ ok: false, error: 'method_not_allowed' })
    })

    test('HEAD of an operation is not answered as a GET: 405 with Allow naming the documented methods, on gated and dynamic paths (public paths answer it: test/http/conventions.test.ts)', async () => {
      for (const path of ['/api/v1/health', '/api/v1/zone/zona-1', '/api/v1/listings']) {
        const response = await system.request(path, { key: enterprise.key, method: 'HEAD' })
        expect(response.status, path).toBe(405)
        expect(response.headers.get('allow'), path).toBe('GET')
        expect(response.headers.get('x-request-id'), path).toBeTruthy()
      }
      // Without a key a gated path reveals nothing, HEAD or not.
      expect((await system.request('/api/v1/zones', { method: 'HEAD' })).status).toBe(401)
    })

    test('GET / points to the reference: a JSON answer without a key', async () => {
      const response = await system.request('/')
      expect(response.status).toBe(200)
      expect(await body(response)).toEqual({ service: 'mirador', docs: '/docs', openapi: '/api/v1/openapi.json' })
    })

    test('one Content-Type for every JSON body: successes, errors, the OpenAPI document and the root alike', async () => {
      const answers = [
        await system.request('/api/v1/health', { key: enterprise.key }),
        await system.request('/api/v1/zones?country=XX', { key: enterprise.key }),
        await system.request('/api/v1/health'),
        await system.request('/api/v1/nowhere', { key: enterprise.key }),
        await system.request('/api/v1/health', { key: enterprise.key, method: 'DELETE' }),
        await system.request('/elsewhere'),
        await system.request('/api/v1/openapi.json'),
        await system.request('/'),
      ]
      expect(answers.map((response) => response.status)).toEqual([200, 400, 401, 404, 405, 404, 200, 200])
      expect(new Set(answers.map((response) => response.headers.get('content-type')))).toEqual(new Set(['application/json;charset=utf-8']))
    })

    test('a body declared over 16 KiB → 413 payload_too_large before it is read', async () => {
      const large = JSON.stringify({ zone: 'Zona 1', profile: 'balanced', padding: 'x'.repeat(17 * 1024) })
      const response = await system.request('/api/v1/briefings/investor', {
        key: enterprise.key,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': String(large.length) },
        body: large,
      })
      expect(response.status).toBe(413)
      expect(await body(response)).toMatchObject({ ok: false, error: 'payload_too_large' })
    })

    test('every response carries X-Request-Id; a sane incoming one is echoed', async () => {
      for (const init of [{}, { key: enterprise.key }, { key: enterprise.key, method: 'PUT' }]) {
        expect((await system.request('/api/v1/health', init)).headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
      }
      const echoed = await system.request('/api/v1/health', { key: enterprise.key, headers: { 'x-request-id': 'trace-42' } })
      expect(echoed.headers.get('x-request-id')).toBe('trace-42')
      const refused = await system.request('/api/v1/health', { key: enterprise.key, headers: { 'x-request-id': 'bad id\u0007' } })
      expect(refused.headers.get('x-request-id')).not.toBe('bad id\u0007')
    })

    test('no plaintext key appears in any event, read-model row or log line', async () => {
      const keys = [enterprise.key, readOnly.key, writeOnly.key]
      const events = JSON.stringify(await system.storage.store.readAll(0, { limit: 100_000 }))
      const tables = await system.storage.db.query<{ table_name: string }>(
        `select table_name from information_schema.tables where table_schema = current_schema()`,
      )
      let rows = ''
      for (const { table_name } of tables) rows += JSON.stringify(await system.storage.db.query(`select * from ${table_name}`))
      expect(tables.length).toBeGreaterThanOrEqual(4)
      expect(events).toContain('key_hash')
      for (const key of keys) {
        expect(events).not.toContain(key)
        expect(rows).not.toContain(key)
        expect(system.logs.join('\n')).not.toContain(key)
        expect(events).not.toContain(key.slice(4, 36))
      }
    })
  })
}
