import { Elysia } from 'elysia'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { BriefingReadModel } from '../../projections/briefings/read-model.ts'
import { briefingRoutes } from '../../src/briefings/routes.ts'
import { briefingService } from '../../src/briefings/service.ts'
import { localAnalyst } from '../../src/domain/briefings/writer.ts'
import { ZONE_INPUT_PATTERN } from '../../src/domain/market/zone-name.ts'
import { gate } from '../../src/http/gate.ts'
import { errorPlugin } from '../../src/http/errors.ts'
import { memoryRateLimiter } from '../../src/ratelimit/memory.ts'
import { cryptoRandom, systemClock } from '../../src/shared/random.ts'
import { startTestSystem, type TestSystem } from '../support/app.ts'
import { databaseTargets } from '../support/databases.ts'
import { fixtureFacts, gtZones } from './fixtures.ts'

type Json = Record<string, unknown>

/**
 * The briefing routes behind the real error mapping and gate, on the harness's owners and keys,
 * with a briefing service over fixture zone facts (the harness's app serves the real market).
 */
async function briefingApp(system: TestSystem) {
  const { db, store } = system.storage
  // The harness's projection runner keeps the briefing read models current, as the server's does.
  const readModel = new BriefingReadModel(db)
  const service = briefingService({ store, readModel, facts: fixtureFacts(gtZones(120)), writer: localAnalyst, clock: systemClock, random: cryptoRandom })
  const app = new Elysia()
    .use(errorPlugin({ info: () => {}, error: () => {} }))
    .group('/api/v1', (api) =>
      api.use(
        briefingRoutes({
          gate: gate({ keys: system.keys, limiter: memoryRateLimiter(), limits: { pro: 1000, enterprise: 1000 }, clock: systemClock, allow: () => 'POST' }),
          service,
        }),
      ),
    )
  return {
    service,
    request(path: string, init: RequestInit & { key: string }) {
      const headers = new Headers(init.headers)
      headers.set('authorization', `Bearer ${init.key}`)
      return app.handle(new Request(`http://localhost/api/v1${path}`, { ...init, headers }))
    },
  }
}

const jsonPost = (key: string, body: unknown, headers: Record<string, string> = {}) => ({
  key,
  method: 'POST',
  headers: { 'content-type': 'application/json', ...headers },
  body: typeof body === 'string' ? body : JSON.stringify(body),
})

for (const target of databaseTargets('briefing routes')) {
  describe(`briefing routes over HTTP (${target.name})`, () => {
    let system: TestSystem
    let api: Awaited<ReturnType<typeof briefingApp>>
    let pro: { key: string }
    let reader: { key: string }

    beforeAll(async () => {
      system = await startTestSystem(await target.open())
      api = await briefingApp(system)
      pro = await system.ownerWithKey('acme', 'pro')
      reader = await system.ownerWithKey('reader', 'pro', ['read'])
    })
    afterAll(() => system.close())

    test('GET /briefings/personas lists the five personas with input schema and vocabulary', async () => {
      const response = await api.request('/briefings/personas', { key: reader.key })
      expect(response.status).toBe(200)
      const body = (await response.json()) as { ok: boolean; count: number; personas: Json[] }
      expect(body.ok).toBe(true)
      expect(body.count).toBe(5)
      expect(Object.fromEntries(body.personas.map((p) => [p.id, p.verdicts]))).toEqual({
        investor: ['BUY', 'HOLD', 'AVOID'],
        homebuyer: ['GOOD_DEAL', 'FAIR_PRICE', 'OVERPRICED'],
        landlord: ['STRONG_YIELD', 'MODERATE_YIELD', 'WEAK_YIELD'],
        developer: ['GO', 'CAUTION', 'NO_GO'],
        broker: ['PRICE_ABOVE_MARKET', 'PRICE_AT_MARKET', 'PRICE_BELOW_MARKET'],
      })
      for (const persona of body.personas) {
        expect(Object.keys(persona).sort()).toEqual(['confidence_levels', 'description', 'id', 'input_schema', 'name', 'verdicts'])
        expect(persona.confidence_levels).toEqual(['low', 'medium', 'high'])
        const schema = persona.input_schema as { type: string; required: string[]; additionalProperties: boolean; properties: Record<string, Json> }
        expect(schema).toMatchObject({ type: 'object', required: ['zone', 'profile'], additionalProperties: false })
        expect(schema.properties.zone).toMatchObject({ type: 'string', pattern: ZONE_INPUT_PATTERN })
        expect(schema.properties.country).toMatchObject({ default: 'GT' })
        expect(schema.properties.language).toMatchObject({ default: 'es' })
        expect((schema.properties.language!.anyOf as Json[]).map((o) => o.const)).toEqual(['es', 'en', 'pt'])
      }
      const extras = (id: string) =>
        Object.keys((body.personas.find((p) => p.id === id)!.input_schema as { properties: Json }).properties)
          .filter((k) => !['zone', 'profile', 'country', 'language'].includes(k))
          .sort()
      expect(extras('investor')).toEqual(['budget_usd', 'horizon_years'])
      expect(extras('homebuyer')).toEqual(['area_m2', 'bedrooms', 'budget_usd', 'property_type'])
      expect(extras('landlord')).toEqual(['property_type'])
      expect(extras('developer')).toEqual(['lot_m2'])
      expect(extras('broker')).toEqual(['area_m2', 'asking_price_usd', 'property_type'])
    })

    test('a briefing, then the same request again from the cache without consuming quota', async () => {
      const first = await api.request('/briefings/investor', jsonPost(pro.key, { zone: 'Zona 1', profile: 'balanced', language: 'en' }))
      expect(first.status).toBe(200)
      const one = (await first.json()) as Json
      expect(one).toMatchObject({ ok: true, persona: 'investor', cached: false, usage: { used: 1, quota: 50, unlimited: false } })
      expect(['BUY', 'HOLD', 'AVOID']).toContain(one.verdict)
      expect(String(one.briefing_id)).toMatch(/^brf_[0-9A-Za-z]{16}$/)
      const second = await api.request('/briefings/investor', jsonPost(pro.key, { language: 'en', profile: 'balanced', zone: 'Zona 1' }))
      expect(await second.json()).toMatchObject({ cached: true, briefing_id: one.briefing_id, usage: { used: 1 } })
    })

    test('a read-only key may list personas but not request a briefing', async () => {
      const response = await api.request('/briefings/investor', jsonPost(reader.key, { zone: 'Zona 2', profile: 'balanced' }))
      expect(response.status).toBe(403)
      expect(await response.json()).toMatchObject({ ok: false, error: 'scope_denied' })
    })

    test('body errors: content type, malformed JSON, fields, size; unknown persona first, unknown zone after validation', async () => {
      const expectError = async (response: Response, status: number, error: string) => {
        expect(response.status).toBe(status)
        const body = (await response.json()) as Json
        expect(body).toMatchObject({ ok: false, error })
        return body
      }
      const text = await expectError(
        await api.request('/briefings/investor', { key: pro.key, method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{}' }),
        400,
        'invalid_request',
      )
      expect(text.details).toEqual([{ field: 'content-type', message: 'Expected application/json' }])
      const malformed = await expectError(await api.request('/briefings/investor', jsonPost(pro.key, '{"zone": "Zona 1",')), 400, 'invalid_request')
      expect(malformed.details).toEqual([{ field: 'body', message: 'Malformed JSON' }])
      const fields = await expectError(
        await api.request('/briefings/broker', jsonPost(pro.key, { zone: 'Zona 1', profile: 'seller', asking_price_usd: 'cheap', extra: 1 })),
        400,
        'invalid_request',
      )
      expect((fields.details as { field: string }[]).map((d) => d.field).sort()).toEqual(['asking_price_usd', 'extra', 'profile'])
      await expectError(await api.request('/briefings/investor', jsonPost(pro.key, [])), 400, 'invalid_request')

      const big = JSON.stringify({ zone: 'Zona 1', profile: 'balanced', padding: 'x'.repeat(17_000) })
      // With a Content-Length the auth gate refuses it before routing; without one, the route does.
      await expectError(await api.request('/briefings/investor', jsonPost(pro.key, big, { 'content-length': String(big.length) })), 413, 'payload_too_large')
      await expectError(await api.request('/briefings/investor', jsonPost(pro.key, big)), 413, 'payload_too_large')

      await expectError(await api.request('/briefings/astrologer', jsonPost(pro.key, '{not json')), 404, 'not_found')
      await expectError(await api.request('/briefings/investor', jsonPost(pro.key, { zone: 'Zona 999', profile: 'balanced' })), 404, 'not_found')
      const usage = await api.service.usage('acme', 'pro', new Date())
      expect(usage.used).toBe(1) // only the first test's briefing
    })

    test('55 concurrent distinct requests of a fresh pro owner: 50 briefings, 5 quota_exceeded (429)', async () => {
      const fresh = await system.ownerWithKey('fresh', 'pro')
      const responses = await Promise.all(
        Array.from({ length: 55 }, (_, i) => api.request('/briefings/homebuyer', jsonPost(fresh.key, { zone: `Zona ${i + 10}`, profile: 'first_time' }))),
      )
      const statuses = responses.map((r) => r.status)
      expect(statuses.filter((s) => s === 200)).toHaveLength(50)
      expect(statuses.filter((s) => s === 429)).toHaveLength(5)
      const refused = responses.find((r) => r.status === 429)!
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
      const body = (await refused.json()) as Json
      expect(body).toMatchObject({ ok: false, error: 'quota_exceeded', used: 50, quota: 50 })
      expect(Date.parse(String(body.resets_at))).toBeGreaterThan(Date.now())
      expect(new Date(String(body.resets_at)).getUTCDate()).toBe(1)
    })
  })
}
