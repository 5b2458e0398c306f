import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { demoMarketSystem, type TestSystem } from '../support/app.ts'

/**
 * One zone spelling everywhere (issue 28, item 12): the name `Zona 3` and the slug `zona-3`, the
 * word in any letter case, name the same zone in the path, the query of /listings and briefing
 * bodies; the answers give both `zone` and `slug`.
 */
describe('a zone named by its name or its slug, in every input', () => {
  let system: TestSystem
  let key: string

  beforeAll(async () => {
    ;({ system, key } = await demoMarketSystem('enterprise'))
  })
  afterAll(() => system?.close())

  const get = async (path: string) => {
    const response = await system.request(path, { key })
    return { status: response.status, body: (await response.json()) as Record<string, any> }
  }
  const brief = async (body: Record<string, unknown>) => {
    const response = await system.request('/api/v1/briefings/investor', {
      key,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ profile: 'balanced', language: 'en', ...body }),
    })
    return { status: response.status, body: (await response.json()) as Record<string, any> }
  }

  const SPELLINGS = ['Zona 3', 'zona-3', 'ZONA 3', 'zona 3', 'Zona-3']

  test('GET /listings?zone=: the same page for every spelling, its listings in Zona 3 with both zone and slug', async () => {
    const pages = await Promise.all(SPELLINGS.map((zone) => get(`/api/v1/listings?country=GT&zone=${encodeURIComponent(zone)}`)))
    for (const page of pages) expect(page).toEqual(pages[0])
    expect(pages[0]!.status).toBe(200)
    expect(pages[0]!.body.total).toBeGreaterThan(0)
    for (const listing of pages[0]!.body.listings) expect(listing).toMatchObject({ zone: 'Zona 3', zone_slug: 'zona-3' })
  })

  test('GET /zone/{slug} and /zone/{slug}/history: the same answer for every spelling, with zone and slug', async () => {
    const zones = await Promise.all(SPELLINGS.map((zone) => get(`/api/v1/zone/${encodeURIComponent(zone)}?country=GT`)))
    for (const zone of zones) expect(zone).toEqual(zones[0])
    expect(zones[0]).toMatchObject({ status: 200, body: { zone: 'Zona 3', slug: 'zona-3' } })
    const histories = await Promise.all(SPELLINGS.map((zone) => get(`/api/v1/zone/${encodeURIComponent(zone)}/history?country=GT&months=2&as_of=2026-11-01T00:00:00Z`)))
    for (const history of histories) expect(history).toEqual(histories[0])
    expect(histories[0]).toMatchObject({ status: 200, body: { zone: 'Zona 3', slug: 'zona-3' } })
  })

  test('POST /briefings/{persona}: the slug briefs the same zone as the name (a cache hit: charged once)', async () => {
    const byName = await brief({ zone: 'Zona 3' })
    expect(byName.status).toBe(200)
    for (const zone of ['zona-3', 'ZONA-3', 'zona 3']) {
      const bySlug = await brief({ zone })
      expect(bySlug.status, zone).toBe(200)
      expect(bySlug.body, zone).toMatchObject({ briefing_id: byName.body.briefing_id, headline: byName.body.headline, body_md: byName.body.body_md, cached: true })
      expect(bySlug.body.usage, zone).toEqual(byName.body.usage)
    }
    expect(byName.body).toMatchObject({ cached: false, usage: { used: 1 }, headline: expect.stringMatching(/^Zona 3, Guatemala/) })
  })

  test('a zone the country does not have is 404 whatever its spelling, named by its slug in the path and its name in a body', async () => {
    expect(await get('/api/v1/zone/ZONA%2099')).toMatchObject({ status: 404, body: { error: 'not_found', message: 'no zone "zona-99" in GT' } })
    expect(await brief({ zone: 'zona-99' })).toMatchObject({ status: 404, body: { error: 'not_found', message: 'Zona 99 does not exist in GT' } })
  })

  test.each(['Zona 03', 'zona-03', 'zona_3', 'zona3', 'Zona  3', ' zona-3', 'zona-0', 'zone-3', 'Zona 3 '])('%j is refused everywhere, with the same message', async (zone) => {
    const message = 'Expected "Zona N" or zona-N, e.g. Zona 10 or zona-10'
    expect(await get(`/api/v1/listings?zone=${encodeURIComponent(zone)}`)).toMatchObject({ status: 400, body: { details: [{ field: 'zone', message }] } })
    expect(await get(`/api/v1/zone/${encodeURIComponent(zone)}`)).toMatchObject({ status: 400, body: { details: [{ field: 'slug', message }] } })
    expect(await brief({ zone })).toMatchObject({ status: 400, body: { details: [{ field: 'zone', message }] } })
  })
})
