import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, describe, expect, test } from 'vitest'
import { initialisedDataDir, type RunningServer, startServer } from '../support/server.ts'

type Json = Record<string, any>

const line = (overrides: Json) =>
  JSON.stringify({
    source: 'broker',
    source_id: 'E2E-1',
    country: 'GT',
    zone: 'Zona 5',
    operation: 'Venta',
    property_type: 'Casa',
    price: 1_550_000,
    currency: 'GTQ',
    area_m2: 210,
    bedrooms: 3,
    bathrooms: 2.5,
    title: 'Casa E2E con jardín',
    broker: { id: 'e2e-broker', name: 'Corredora E2E' },
    url: 'https://e2e.example/1',
    listed_at: '2026-11-01T09:00:00Z',
    verified_at: '2026-11-02T09:00:00Z',
    status: 'active',
    observed_at: '2026-11-02T09:00:00Z',
    ...overrides,
  })

describe('market data on the real server: demo on start, ingest while it runs', () => {
  const dataDir = initialisedDataDir()
  let server: RunningServer
  let key = ''
  afterAll(() => server?.stop())

  const get = async (path: string) => (await (await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${key}` } })).json()) as Json
  const search = (title: string) => get(`/api/v1/listings?country=GT&zone=${encodeURIComponent('Zona 5')}&limit=200`).then((r) => r.listings.filter((l: Json) => l.title === title))

  test('an empty store starts with the demo market: 8 countries, at least 12 zones each', async () => {
    server = await startServer({ DATA_DIR: dataDir, DEMO_SEED: 'on', DEMO_LISTINGS: '400' })
    expect(server.output()).toContain('"event":"demo_seeded"')
    await server.cli('owner', 'create', '--id', 'acme', '--tier', 'enterprise')
    key = (JSON.parse((await server.cli('key', 'issue', '--owner', 'acme', '--scopes', 'read', '--actor', 'acme', '--json')).stdout) as Json).key
    for (let i = 0; i < 100 && (await get('/api/v1/health')).ok !== true; i++) await new Promise((r) => setTimeout(r, 50))
    for (const country of ['GT', 'SV', 'HN', 'CR', 'BZ', 'DO', 'PA', 'BR']) {
      const zones = await get(`/api/v1/zones?country=${country}`)
      expect(zones.count, country).toBeGreaterThanOrEqual(12)
      expect(zones.zones.map((z: Json) => z.zone)).toEqual(zones.zones.map((_: unknown, i: number) => `Zona ${i + 1}`))
    }
  })

  test('ingest reports bad lines and exits 1; the good line is served within seconds; a re-run changes nothing', async () => {
    const file = join(dataDir, 'feed.ndjson')
    writeFileSync(file, [line({}), '{"source":"broker"', line({ source_id: 'E2E-2', currency: 'EUR' }), ''].join('\n'))
    const run = await server.cli('ingest', file)
    expect(run.code).toBe(1)
    expect(run.stdout).toContain('read 3, new 1, changed 0, unchanged 0, rejected 2')
    expect(run.stderr).toMatch(/line 2: .*JSON/)
    expect(run.stderr).toMatch(/line 3: .*currency/)

    const started = Date.now()
    let found: Json[] = []
    while (found.length === 0 && Date.now() - started < 5000) {
      found = await search('Casa E2E con jardín')
      if (found.length === 0) await new Promise((r) => setTimeout(r, 100))
    }
    expect(found).toHaveLength(1)
    expect(found[0]).toMatchObject({ price_local: 1_550_000, currency: 'GTQ', broker: { id: 'e2e-broker' } })

    const again = await server.cli('ingest', file)
    expect(again.stdout).toContain('read 3, new 0, changed 0, unchanged 1, rejected 2')
  })

  test('a price change and a delisting reach the API; the scraped copy of a listing never does', async () => {
    const file = join(dataDir, 'changes.ndjson')
    writeFileSync(
      file,
      [
        line({ price: 1_450_000, observed_at: '2026-11-10T09:00:00Z' }),
        line({ source: 'scraped', source_id: 'SCR-9', broker: undefined, title: 'Casa E2E raspada', verified_at: null }),
      ].join('\n'),
    )
    const run = await server.cli('ingest', file, '--json')
    expect(run.code).toBe(0)
    expect(JSON.parse(run.stdout)).toMatchObject({ read: 2, new: 1, changed: 1, rejected: 0 })
    const started = Date.now()
    let price = 0
    while (price !== 1_450_000 && Date.now() - started < 5000) price = (await search('Casa E2E con jardín'))[0]?.price_local
    expect(price).toBe(1_450_000)
    expect(await search('Casa E2E raspada')).toEqual([])

    writeFileSync(file, line({ price: 1_450_000, status: 'delisted', observed_at: '2026-11-12T09:00:00Z' }))
    expect((await server.cli('ingest', file)).code).toBe(0)
    let gone = false
    for (let i = 0; i < 50 && !gone; i++) gone = (await search('Casa E2E con jardín')).length === 0 || (await new Promise((r) => setTimeout(r, 100)), false)
    expect(gone).toBe(true)
  })

  test('demo seed with the same seed records nothing new', async () => {
    const run = await server.cli('demo', 'seed', '--listings', '400', '--json')
    expect(run.code).toBe(0)
    expect(JSON.parse(run.stdout)).toMatchObject({ new: 0, changed: 0, listings: 400 })
  })
})
