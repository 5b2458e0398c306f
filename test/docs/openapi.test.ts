import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Validator } from '@seriousme/openapi-schema-validator'
import openapiTS, { astToString } from 'openapi-typescript'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { openPglite } from '../../src/db/pglite.ts'
import { declaredAccess } from '../../src/http/gate.ts'
import { localAnalyst } from '../../src/domain/briefings/writer.ts'
import { fail } from '../../src/shared/errors.ts'
import { SCOPES } from '../../src/domain/keys/key.ts'
import { type TestSystem, startTestSystem } from '../support/app.ts'
import { type Json, resolveRefs, schemaValidator } from '../support/openapi.ts'
import { OPERATIONS } from '../support/operations.ts'
import { runProgram } from '../support/server.ts'

const ROOT = join(import.meta.dirname, '../..')
/** A linter run by npx: 5–10 s on a quiet machine, over a minute at a load of 7; its spec waits as long (slow on purpose). */
const LINT_TIMEOUT_MS = 300_000

/** Every schema object in a JSON tree. */
const schemasIn = (node: unknown): Json[] =>
  Array.isArray(node) ? node.flatMap(schemasIn) : node !== null && typeof node === 'object' ? [node as Json, ...Object.values(node).flatMap(schemasIn)] : []

describe('the OpenAPI document', () => {
  let system: TestSystem
  let document: Json
  let keys: Record<'pro' | 'writeOnly' | 'free', string>
  const ajv = schemaValidator()

  beforeAll(async () => {
    system = await startTestSystem(await openPglite(), {
      limits: { pro: 1000, enterprise: 1000 },
      quotas: { pro: 1, enterprise: 500 },
      // The local analyst, except that the writer is unreachable for Zona 2 (to see a 502).
      writer: {
        write: (persona, input, facts) =>
          input.zone === 'Zona 2'
            ? Promise.reject(fail.upstreamError('the AI writer could not be reached; no quota was used'))
            : localAnalyst.write(persona, input, facts),
      },
    })
    await system.run('demo seed', { listings: 112 })
    await system.settle()
    keys = {
      pro: (await system.ownerWithKey('acme', 'pro')).key,
      writeOnly: (await system.ownerWithKey('scribe', 'pro', ['write'])).key,
      free: (await system.ownerWithKey('cheap', 'free')).key,
    }
    document = (await (await system.request('/api/v1/openapi.json')).json()) as Json
  })
  afterAll(() => system?.close())

  test('is served without a key and equals docs/openapi.json, as `npm run openapi` writes it', async () => {
    const response = await system.request('/api/v1/openapi.json')
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toMatch(/^application\/json/)
    const committed = JSON.parse(readFileSync(join(ROOT, 'docs/openapi.json'), 'utf8'))
    expect(document, 'docs/openapi.json is stale: run npm run openapi').toEqual(committed)
  })

  test('is a valid OpenAPI 3.1 document', async () => {
    const result = await new Validator().validate(document as never)
    expect(result.errors ?? []).toEqual([])
    expect(result.valid).toBe(true)
    expect(document.openapi).toBe('3.1.0')
  })

  test('describes exactly the endpoints Elysia serves with a scope, each with the scope its route declares', () => {
    const declared = system.app.routes
      .filter((route) => ['read', 'write'].includes(declaredAccess(route) ?? ''))
      .map((route) => `${route.method} ${route.path.replace(/:(\w+)/g, '{$1}')} ${declaredAccess(route)}`)
      .sort()
    const documented = Object.entries(document.paths as Json)
      .flatMap(([path, methods]) => Object.entries(methods as Json).map(([method, op]) => `${method.toUpperCase()} ${path} ${op['x-required-scope']}`))
      .sort()
    expect(documented).toEqual(declared)
    expect(documented).toHaveLength(OPERATIONS.length)
    for (const methods of Object.values(document.paths as Json)) {
      for (const op of Object.values(methods as Json)) {
        expect(op.security).toEqual([{ apiKey: [op['x-required-scope']] }])
        expect((op.responses['200'] ?? op.responses['201']).headers).toHaveProperty('X-RateLimit-Remaining')
        expect(op.responses['401'].content['application/json'].examples).toHaveProperty('auth_required')
        expect(op.responses['429'].headers).toHaveProperty('Retry-After')
      }
    }
    expect(document.components.securitySchemes.apiKey).toMatchObject({ type: 'http', scheme: 'bearer' })
  })

  test('every answer of the API matches the schema documented for its operation and status', async () => {
    const post = (key: string, body: unknown, path = '/api/v1/briefings/investor') =>
      system.request(path, { key, method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
    const get = (path: string, key?: string) => system.request(path, key ? { key } : {})
    // In order: the quota (1 for pro) is spent by the first briefing, after the writer's failure.
    const cases: [string, string, () => Promise<Response>][] = [
      ['get', '/api/v1/health', () => get('/api/v1/health', keys.pro)],
      ['get', '/api/v1/health', () => get('/api/v1/health')],
      ['get', '/api/v1/health', () => get('/api/v1/health', `${keys.pro.slice(0, -1)}${keys.pro.endsWith('x') ? 'y' : 'x'}`)],
      ['get', '/api/v1/health', () => get('/api/v1/health', keys.free)],
      ['get', '/api/v1/health', () => get('/api/v1/health', keys.writeOnly)],
      ['get', '/api/v1/zones', () => get('/api/v1/zones?country=cr', keys.pro)],
      ['get', '/api/v1/zones', () => get('/api/v1/zones?country=XX', keys.pro)],
      ['get', '/api/v1/zone/{slug}', () => get('/api/v1/zone/zona-3?country=PA', keys.pro)],
      ['get', '/api/v1/zone/{slug}', () => get('/api/v1/zone/zona-99', keys.pro)],
      ['get', '/api/v1/zone/{slug}', () => get('/api/v1/zone/three', keys.pro)],
      ['get', '/api/v1/zones', () => get('/api/v1/zones?country=PA&as_of=2026-04-01T00:00:00Z', keys.pro)],
      ['get', '/api/v1/zones', () => get('/api/v1/zones?as_of=2999-01-01T00:00:00Z', keys.pro)],
      ['get', '/api/v1/zone/{slug}/history', () => get('/api/v1/zone/zona-3/history?country=PA&months=3', keys.pro)],
      ['get', '/api/v1/zone/{slug}/history', () => get('/api/v1/zone/zona-99/history', keys.pro)],
      ['get', '/api/v1/zone/{slug}/history', () => get('/api/v1/zone/zona-3/history?months=40', keys.pro)],
      ['get', '/api/v1/listings', () => get('/api/v1/listings?country=GT&operation=venta&limit=5', keys.pro)],
      ['get', '/api/v1/listings', () => get('/api/v1/listings?limit=0&sort=cheap', keys.pro)],
      ['get', '/api/v1/briefings/personas', () => get('/api/v1/briefings/personas', keys.pro)],
      ['post', '/api/v1/briefings/investor', () => post(keys.pro, { zone: 'Zona 2', profile: 'balanced' })],
      ['post', '/api/v1/briefings/investor', () => post(keys.pro, { zone: 'Zona 1', profile: 'balanced', country: 'gt' })],
      ['post', '/api/v1/briefings/investor', () => post(keys.pro, { zone: 'Zona 1', profile: 'reckless' })],
      ['post', '/api/v1/briefings/investor', () => post(keys.pro, { zone: 'Zona 99', profile: 'balanced' })],
      ['post', '/api/v1/briefings/landlord', () => post(keys.pro, { zone: 'Zona 1', profile: 'long_term', budget_usd: 1 }, '/api/v1/briefings/landlord')],
      ['post', '/api/v1/briefings/investor', () => post(keys.pro, { zone: 'Zona 1', profile: 'balanced', padding: 'x'.repeat(20_000) })],
      ['post', '/api/v1/briefings/investor', () => post(keys.pro, { zone: 'Zona 3', profile: 'balanced' })],
      ['post', '/api/v1/webhooks', () => post(keys.pro, { url: 'https://hooks.example.com/a', events: ['listing.listed'], country: 'gt' }, '/api/v1/webhooks')],
      ['post', '/api/v1/webhooks', () => post(keys.pro, { url: 'http://169.254.169.254/', events: ['listing.listed'] }, '/api/v1/webhooks')],
      ['get', '/api/v1/webhooks', () => get('/api/v1/webhooks', keys.pro)],
      ['delete', '/api/v1/webhooks/{id}', () => system.request('/api/v1/webhooks/whk_0000000000000000', { key: keys.pro, method: 'DELETE' })],
      ['get', '/api/v1/webhooks/{id}/deliveries', () => get('/api/v1/webhooks/whk_0000000000000000/deliveries', keys.pro)],
    ]
    const seen = new Set<string>()
    for (const [method, path, send] of cases) {
      const response = await send()
      const body = await response.json()
      const status = String(response.status)
      const documented = document.paths[path][method].responses[status]
      const what = `${method.toUpperCase()} ${path} → ${status} ${body.error ?? ''}`
      expect(documented, `${what} is not documented`).toBeDefined()
      const schema = resolveRefs(documented.content['application/json'].schema, document) as Json
      const valid = ajv.validate(schema, body)
      expect(valid, `${what}: ${JSON.stringify(ajv.errors)}`).toBe(true)
      for (const name of Object.keys(documented.headers ?? {}).filter((h) => h === 'X-Request-Id' || h === 'Retry-After')) {
        expect(response.headers.get(name), `${what}: header ${name}`).toBeTruthy()
      }
      seen.add(`${status} ${body.error ?? 'ok'}`)
    }
    expect([...seen].sort()).toEqual(
      ['200 ok', '201 ok', '400 invalid_request', '401 auth_required', '401 invalid_key', '403 scope_denied', '403 tier_required', '404 not_found', '413 payload_too_large', '429 quota_exceeded', '502 upstream_error'].sort(),
    )
  })

  test('Spectral’s spectral:oas ruleset reports no error; the warnings left are the two docs/decisions.md explains', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mirador-openapi-'))
    try {
      const file = join(dir, 'openapi.json')
      writeFileSync(file, JSON.stringify(document))
      const linted = await runProgram('npx', ['spectral', 'lint', '--ruleset', join(ROOT, '.spectral.yaml'), file, '-f', 'json'], {}, LINT_TIMEOUT_MS)
      const results = JSON.parse(linted.stdout) as { code: string; severity: number; path: string[]; message: string }[]
      const errors = results.filter((result) => result.severity === 0)
      expect(errors.map((e) => `${e.code} ${e.path.join('.')}: ${e.message}`)).toEqual([])
      expect([...new Set(results.map((result) => result.code))].sort()).toEqual(['info-contact', 'oas3-operation-security-defined'])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, LINT_TIMEOUT_MS)

  test('Redocly’s recommended-strict ruleset (every recommended rule an error) reports nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mirador-openapi-'))
    try {
      const file = join(dir, 'openapi.json')
      writeFileSync(file, JSON.stringify(document))
      const linted = await runProgram('npx', ['redocly', 'lint', '--extends', 'recommended-strict', '--format', 'json', file], {}, LINT_TIMEOUT_MS)
      const problems = (JSON.parse(linted.stdout) as { problems: { ruleId: string; severity: string; message: string }[] }).problems
      expect(problems.map((p) => `${p.ruleId} ${p.severity}: ${p.message}`)).toEqual([])
      expect(linted.code).toBe(0)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, LINT_TIMEOUT_MS)

  test('405 method_not_allowed is documented, with the very body the server answers', async () => {
    const response = await system.request('/api/v1/zones', { key: keys.pro, method: 'DELETE' })
    expect(response.status).toBe(405)
    expect(response.headers.get('allow')).toBe('GET')
    expect(document.info.description).toContain(`\`${await response.text()}\``)
    expect(document.info.description).toContain('405 method_not_allowed')
  })

  test('integers are integers: the health answer types rate_limit, quota and lag as integers, tier and scopes as their single definitions', () => {
    const all = schemasIn(document)
    expect(all.filter((schema) => schema.format === 'integer')).toEqual([])
    expect(all.filter((schema) => Array.isArray(schema.anyOf) && schema.anyOf.some((m: Json) => m.type === 'string') && schema.anyOf.some((m: Json) => m.type === 'integer'))).toEqual([])
    const health = resolveRefs(document.paths['/api/v1/health'].get.responses['200'].content['application/json'].schema, document) as Json
    const counter = health.properties.rate_limit.anyOf.find((member: Json) => member.type === 'object')
    for (const field of ['limit', 'used', 'remaining']) expect(counter.properties[field]).toEqual({ type: 'integer' })
    for (const field of ['used', 'quota']) expect(health.properties.quota.properties[field]).toEqual({ type: 'integer' })
    expect(health.properties.projections.items.properties.lag_events).toEqual({ type: 'integer' })
    expect(health.properties.tier.enum).toEqual(['pro', 'enterprise', 'admin'])
    expect(health.properties.scopes.items.enum).toEqual([...SCOPES])
  })

  test('the typed client in examples/client is generated from this document (npm run openapi)', async () => {
    const generated = astToString(await openapiTS(readFileSync(join(ROOT, 'docs/openapi.json'), 'utf8')))
    const committed = readFileSync(join(ROOT, 'examples/client/mirador-api.d.ts'), 'utf8')
    expect(committed.slice(committed.indexOf('export '))).toBe(generated.slice(generated.indexOf('export ')))
  })
})
