import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { openAiWriter, writerFor } from '../../src/briefings/openai-writer.ts'
import { quotaStream } from '../../src/domain/briefings/events.ts'
import { briefingEstimate } from './fixtures.ts'
import { PERSONAS } from '../../src/domain/briefings/personas/index.ts'
import type { Briefed } from '../../src/briefings/deps.ts'
import { localAnalyst } from '../../src/domain/briefings/writer.ts'
import { openPglite } from '../../src/db/pglite.ts'
import { cryptoRandom } from '../../src/shared/random.ts'
import { answer, type FakeOpenAi, httpError, rawContent, slow, startFakeOpenAi } from '../support/fake-openai.ts'
import { facts, fixtureFacts, gtZones } from './fixtures.ts'
import { briefingServiceOn, briefingStoreFor, failure } from './harness.ts'

const investor = PERSONAS.investor
const input = investor.parse({ zone: 'Zona 10', profile: 'balanced', language: 'en', budget_usd: 150_000 })
const good = { verdict: 'BUY', confidence: 'medium', headline: 'Zona 10: BUY — priced 21% above the country', body_md: '## Zona 10\n\nMedian USD 1,820/m².' }
/** The response body (no Idempotency-Key is sent here). */
const bodyOf = (answer: Briefed) => answer.briefing

describe('OpenAI writer against a local chat-completions server', () => {
  let fake: FakeOpenAi
  const writer = () => openAiWriter({ apiKey: 'sk-test', baseUrl: fake.baseUrl, model: 'gpt-test', timeoutMs: 15_000 })
  const requestsBefore = () => fake.requests.length

  beforeAll(async () => {
    fake = await startFakeOpenAi()
  })
  afterAll(() => fake.close())

  test('a good answer becomes the briefing; the prompt carries the facts and asks for structured output', async () => {
    fake.script(answer(good))
    const start = requestsBefore()
    const draft = await writer().write(investor, input, facts())
    expect(draft).toEqual({ ...good, writer: 'openai', model: 'gpt-test' })
    expect(fake.requests).toHaveLength(start + 1)
    const sent = fake.requests.at(-1)!
    expect(sent.authorization).toBe('Bearer sk-test')
    expect(sent.body.model).toBe('gpt-test')
    const format = sent.body.response_format as { type: string; json_schema: { strict: boolean; schema: { properties: Record<string, { enum?: string[] }> } } }
    expect(format.type).toBe('json_schema')
    expect(format.json_schema.strict).toBe(true)
    expect(format.json_schema.schema.properties.verdict!.enum).toEqual(['BUY', 'HOLD', 'AVOID'])
    const messages = sent.body.messages as { role: string; content: string }[]
    expect(messages[0]!.content).toContain('BUY, HOLD, AVOID')
    expect(messages[0]!.content).toContain('English')
    const facts_ = JSON.parse(messages[1]!.content) as { facts: { zone: { median_ppm2_usd: number }; country: { median_ppm2_usd: number } }; request: { budget_usd: number } }
    expect(facts_.facts.zone.median_ppm2_usd).toBe(1820)
    expect(facts_.facts.country.median_ppm2_usd).toBe(1500)
    expect(facts_.request.budget_usd).toBe(150_000)
  })

  test('given an input that describes a property, the prompt carries its estimate and the comparables, and asks to name them', async () => {
    const broker = PERSONAS.broker
    const body = { zone: 'Zona 10', profile: 'listing_agent', language: 'en', property_type: 'Apartamento', area_m2: 100, asking_price_usd: 205_000 }
    const input = broker.parse(body)
    const candidates = [1500, 1600, 1700, 1800, 1900].map((ppm2, i) => ({ id: `lst_apt${i + 1}`, areaM2: 100, bedrooms: 2, bathrooms: 2, cents: ppm2 * 100 * 100 }))
    const withEstimate = { ...facts(), estimate: briefingEstimate(broker.estimateSubject(input)!, candidates) }
    fake.script(answer({ ...good, verdict: 'PRICE_ABOVE_MARKET' }))
    await writer().write(broker, input, withEstimate)
    const messages = fake.requests.at(-1)!.body.messages as { role: string; content: string }[]
    expect(messages[0]!.content).toContain('name the listing_id of every comparable')
    expect(messages[0]!.content).toContain('below low_usd → PRICE_BELOW_MARKET')
    const sent = JSON.parse(messages[1]!.content) as { facts: { estimate: { estimate: { price_usd: number }; comparables: { listing_id: string }[] } }; derived_figures: { kind: string }[] }
    expect(sent.facts.estimate.estimate.price_usd).toBe(170_000)
    expect(sent.facts.estimate.comparables.map((c) => c.listing_id)).toEqual(candidates.map((c) => c.id))
    expect(sent.derived_figures.map((f) => f.kind)).toContain('asking_vs_estimate')
  })

  test('a verdict outside the vocabulary gets one retry, told what was wrong', async () => {
    fake.script(answer({ ...good, verdict: 'STRONG_BUY' }), answer(good))
    const start = requestsBefore()
    expect(await writer().write(investor, input, facts())).toMatchObject({ verdict: 'BUY' })
    expect(fake.requests).toHaveLength(start + 2)
    const retry = fake.requests.at(-1)!.body.messages as { role: string; content: string }[]
    expect(retry.at(-1)!.content).toContain('"STRONG_BUY" is not one of BUY, HOLD, AVOID')
  })

  test('malformed JSON once, then a good answer: success', async () => {
    fake.script(rawContent('{"verdict": "BUY", '), answer(good))
    expect(await writer().write(investor, input, facts())).toMatchObject({ verdict: 'BUY' })
  })

  test('two bad answers: upstream_error', async () => {
    fake.script(answer({ ...good, verdict: 'MAYBE' }), answer({ ...good, verdict: 'MAYBE' }))
    const start = requestsBefore()
    const error = await failure(writer().write(investor, input, facts()))
    expect(error.code).toBe('upstream_error')
    expect(error.message).toContain('after 2 attempts')
    expect(fake.requests).toHaveLength(start + 2)

    fake.script(rawContent('not json'), answer({ verdict: 'BUY' }))
    const schema = await failure(writer().write(investor, input, facts()))
    expect(schema.message).toContain('did not match the schema')
  })

  test('HTTP 500: upstream_error without retrying', async () => {
    fake.script(httpError(500), answer(good))
    const start = requestsBefore()
    const error = await failure(writer().write(investor, input, facts()))
    expect(error).toMatchObject({ code: 'upstream_error', message: 'the AI writer failed (HTTP 500); no quota was used' })
    expect(fake.requests).toHaveLength(start + 1)
    fake.script()
  })

  test('an answer slower than the timeout: upstream_error', async () => {
    fake.script(slow(20_000, answer(good)))
    const impatient = openAiWriter({ apiKey: 'sk-test', baseUrl: fake.baseUrl, model: 'gpt-test', timeoutMs: 300 })
    const error = await failure(impatient.write(investor, input, facts()))
    expect(error).toMatchObject({ code: 'upstream_error', message: 'the AI writer did not answer within 0.3 s; no quota was used' })
  })

  test('the configuration picks the writer: OpenAI with a key, the local analyst without', () => {
    expect(writerFor({ apiKey: undefined, baseUrl: undefined, model: 'gpt-test', timeoutMs: 1000 })).toBe(localAnalyst)
    expect(writerFor({ apiKey: 'sk-test', baseUrl: fake.baseUrl, model: 'gpt-test', timeoutMs: 1000 })).not.toBe(localAnalyst)
  })

  describe('through the briefing service', () => {
    const env = briefingStoreFor(openPglite)

    test('failures charge no quota; a success is charged and records writer and model', async () => {
      const service = briefingServiceOn(env.db, env.store, { facts: fixtureFacts(gtZones(20)), writer: writer(), clock: () => new Date('2026-05-20T10:00:00Z'), random: cryptoRandom })
      const who = { ownerId: 'olga', keyId: 'key_olga', tier: 'pro' as const }
      const body = { zone: 'Zona 3', profile: 'aggressive', language: 'en' }

      fake.script(httpError(500))
      expect((await failure(service.brief('investor', body, who).then(bodyOf))).code).toBe('upstream_error')
      fake.script(answer({ ...good, verdict: 'GO' }), rawContent('{'))
      expect((await failure(service.brief('investor', body, who).then(bodyOf))).code).toBe('upstream_error')
      expect(await env.store.readStream(quotaStream('olga', '2026-05'))).toEqual([])

      fake.script(answer(good))
      const ok = await service.brief('investor', body, who).then(bodyOf)
      expect(ok).toMatchObject({ verdict: 'BUY', cached: false, usage: { used: 1, quota: 50 } })
      const [charged] = await env.store.readStream(quotaStream('olga', '2026-05'))
      expect(charged!.data).toMatchObject({ writer: 'openai', model: 'gpt-test', result: good })
      // The cached briefing is served without asking the model again.
      const before = requestsBefore()
      expect(await service.brief('investor', body, who).then(bodyOf)).toMatchObject({ cached: true, headline: good.headline })
      expect(fake.requests).toHaveLength(before)
    })
  })
})
