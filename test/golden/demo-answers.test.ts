import { createHash } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { openPglite } from '../../src/db/pglite.ts'
import { startTestSystem, type TestSystem } from '../support/app.ts'

/**
 * What the API answers on the demo market (seed `mirador`, 2,000 listings, history to 2026-05-01),
 * at a fixed instant, recorded once and held byte for byte: a change of structure must not change an
 * answer. Each answer is kept as the SHA-256 of its status and body (briefing ids, which are random,
 * are blanked). `GOLDEN=write` records the answers anew (only for a change meant to alter them, and
 * say so in the commit); `GOLDEN_DUMP=DIR` writes every body there to see what differs.
 */

const GOLDEN = join(import.meta.dirname, 'demo-answers.json')
const NOW = new Date('2026-05-01T12:34:56.789Z')
const COUNTRIES = ['GT', 'SV', 'HN', 'CR', 'BZ', 'DO', 'PA', 'BR']

type Answer = { status: number; body: string }

function requests(zonesPerCountry: Record<string, number>): { name: string; path: string; init?: RequestInit }[] {
  const out: { name: string; path: string; init?: RequestInit }[] = []
  for (const country of COUNTRIES) {
    out.push({ name: `zones ${country}`, path: `/api/v1/zones?country=${country}` })
    for (let n = 1; n <= zonesPerCountry[country]!; n++) {
      out.push({ name: `zone ${country} ${n}`, path: `/api/v1/zone/zona-${n}?country=${country}` })
    }
    for (const sort of ['newest', 'price_asc', 'price_desc']) {
      out.push({ name: `listings ${country} ${sort}`, path: `/api/v1/listings?country=${country}&sort=${sort}&limit=200` })
    }
  }
  const filters = [
    'zone=Zona%2010&operation=Venta&property_type=Casa&sort=price_asc',
    'zone=zona%203&operation=venta',
    'operation=Renta&sort=price_desc&limit=50&offset=10',
    'property_type=Apartamento&price_min=100000&price_max=300000',
    'price_min=0.07&price_max=150000.5&sort=price_asc&limit=100',
    'country=cr&zone=Zona%201&limit=5&offset=2',
    'offset=10000',
    'zone=Zona%20999',
  ]
  for (const filter of filters) out.push({ name: `listings ${filter}`, path: `/api/v1/listings?${filter}` })
  out.push({ name: 'zones default country', path: '/api/v1/zones' })
  out.push({ name: 'zones lower case', path: '/api/v1/zones?country=gt' })
  out.push({ name: 'personas', path: '/api/v1/briefings/personas' })
  const brief = (persona: string, body: unknown) => ({
    name: `briefing ${persona} ${JSON.stringify(body)}`,
    path: `/api/v1/briefings/${persona}`,
    init: { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } },
  })
  out.push(brief('investor', { zone: 'Zona 3', profile: 'balanced', language: 'en', budget_usd: 250000 }))
  out.push(brief('homebuyer', { zone: 'Zona 10', profile: 'family', country: 'GT', bedrooms: 3 }))
  out.push(brief('landlord', { zone: 'Zona 2', profile: 'long_term', country: 'CR', property_type: 'Apartamento' }))
  out.push(brief('developer', { zone: 'Zona 5', profile: 'mixed_use', country: 'PA', lot_m2: 800, language: 'es' }))
  out.push(brief('broker', { zone: 'Zona 4', profile: 'listing_agent', country: 'BR', asking_price_usd: 300000, area_m2: 120, language: 'pt' }))
  // The same briefing again: served from the cache.
  out.push({ ...brief('investor', { zone: 'Zona 3', profile: 'balanced', language: 'en', budget_usd: 250000 }), name: 'briefing investor again (cached)' })
  // Judged against the estimate of the property (decision 0110): one with enough comparables each, one without.
  out.push(brief('broker', { zone: 'Zona 5', profile: 'buyer_agent', property_type: 'Apartamento', area_m2: 120, asking_price_usd: 300000, language: 'en' }))
  out.push(brief('homebuyer', { zone: 'Zona 10', profile: 'family', property_type: 'Casa', area_m2: 120, bedrooms: 3, budget_usd: 120000, language: 'en' }))
  out.push(brief('broker', { zone: 'Zona 2', profile: 'listing_agent', property_type: 'Apartamento', area_m2: 120, asking_price_usd: 150000 }))
  return out
}

/** Random briefing ids are not part of what is compared. */
const stable = (text: string) => text.replace(/"briefing_id":"brf_[0-9A-Za-z]+"/g, '"briefing_id":"brf_…"')
const digest = (answer: Answer) => createHash('sha256').update(`${answer.status}\n${answer.body}`).digest('hex')

describe('the demo market answers byte for byte as recorded', () => {
  let system: TestSystem
  let key = ''

  beforeAll(async () => {
    system = await startTestSystem(await openPglite(), { clock: () => new Date(NOW) })
    await system.run('demo seed', { anchor: '2026-05-01' })
    key = (await system.ownerWithKey('golden', 'enterprise')).key
    await system.settle()
  }, 120_000)
  afterAll(() => system?.close())

  test('every zone, zone list, listing page, persona list and briefing', async () => {
    const counts: Record<string, number> = {}
    for (const country of COUNTRIES) {
      const body = (await (await system.request(`/api/v1/zones?country=${country}`, { key })).json()) as { count: number }
      counts[country] = body.count
    }
    const answers: Record<string, string> = {}
    for (const { name, path, init } of requests(counts)) {
      const response = await system.request(path, { ...init, key })
      const answer = { status: response.status, body: stable(await response.text()) }
      answers[name] = digest(answer)
      if (process.env.GOLDEN_DUMP) writeFileSync(join(process.env.GOLDEN_DUMP, `${name.replace(/[^A-Za-z0-9]+/g, '_').slice(0, 120)}.json`), answer.body)
    }
    if (process.env.GOLDEN === 'write') writeFileSync(GOLDEN, `${JSON.stringify(answers, null, 1)}\n`)
    const recorded = JSON.parse(readFileSync(GOLDEN, 'utf8')) as Record<string, string>
    expect(Object.keys(answers).length).toBeGreaterThan(150)
    expect(answers).toEqual(recorded)
  }, 120_000)
})
