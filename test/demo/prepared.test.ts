import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openPglite } from '../../src/db/pglite.ts'
import type { RecordedEvent } from '../../src/eventstore/port.ts'
import { seedDemo } from '../../src/demo/seed.ts'
import { copyPreparedDemo, prepareDemo, preparedDemoDir } from '../../src/prepared-demo.ts'
import { embeddedStoreDir } from '../../src/storage.ts'
import { startTestSystem, type TestSystem } from '../support/app.ts'
import { tempDataDir } from '../support/server.ts'

/** A first start's configuration: embedded, the demo on, 200 listings, DATA_DIR `dataDir`. */
const firstStart = (dataDir: string) => ({ dataDir, databaseUrl: undefined, esdbConnectionString: undefined, demoOnEmpty: true, demoListings: 200 })

describe('the demo market prepared at install (decision 0123)', () => {
  const root = join(tempDataDir('mirador-prepared-'), 'demo')
  const demo = { seed: 'mirador', listings: 200, anchor: new Date('2026-03-10T00:00:00.000Z') }
  const afternoon = new Date('2026-03-10T15:30:00.000Z')
  const clock = () => new Date('2026-03-11T08:00:00.000Z')
  let prepared = ''
  beforeAll(async () => {
    prepared = await prepareDemo(demo, root)
  }, 120_000)

  describe('a first start that copies it answers exactly as a first start that seeds the same market', () => {
    let copied: TestSystem
    let seeded: TestSystem
    beforeAll(async () => {
      const dataDir = tempDataDir()
      expect(copyPreparedDemo(firstStart(dataDir), afternoon, root)).toBe(prepared)
      copied = await startTestSystem(await openPglite(embeddedStoreDir(dataDir)), { clock })
      seeded = await startTestSystem(await openPglite(), { clock })
      await seedDemo(seeded.storage.store, demo)
      for (const system of [copied, seeded]) await system.settle()
    }, 120_000)
    afterAll(async () => {
      await copied?.close()
      await seeded?.close()
    })

    it('the same events, in the same order', async () => {
      const read = (s: TestSystem) => s.storage.store.readAll(0, { limit: 100_000 })
      const [a, b] = [await read(copied), await read(seeded)]
      const comparable = (events: RecordedEvent[]) => events.map(({ recordedAt: _at, ...event }) => event)
      expect(a.length).toBeGreaterThan(200)
      expect(comparable(a)).toEqual(comparable(b))
    })

    it('the same zones in every country, the same zone figures and the same listings', async () => {
      const [copiedKey, seededKey] = await Promise.all([copied, seeded].map(async (s) => (await s.ownerWithKey('reader', 'pro')).key))
      const paths = [
        ...['GT', 'SV', 'HN', 'CR', 'BZ', 'DO', 'PA', 'BR'].map((country) => `/api/v1/zones?country=${country}`),
        '/api/v1/zone/zona-3?country=GT',
        '/api/v1/listings?country=GT&operation=Venta&limit=200',
        '/api/v1/listings?country=BR&limit=200&sort=price_asc',
        '/api/v1/listings/changes?limit=1000',
      ]
      for (const path of paths) {
        const [a, b] = await Promise.all([copied.request(path, { key: copiedKey }), seeded.request(path, { key: seededKey })])
        expect([a.status, path]).toEqual([200, path])
        expect(await a.json()).toEqual(await b.json())
      }
    })
  })

  it('is not copied for another day, another size, with the demo off, with a store already there, or with events kept elsewhere', () => {
    const nextDay = new Date('2026-03-11T00:00:01.000Z')
    expect(copyPreparedDemo(firstStart(tempDataDir()), nextDay, root)).toBeNull()
    expect(copyPreparedDemo({ ...firstStart(tempDataDir()), demoListings: 300 }, afternoon, root)).toBeNull()
    expect(copyPreparedDemo({ ...firstStart(tempDataDir()), demoOnEmpty: false }, afternoon, root)).toBeNull()
    expect(copyPreparedDemo({ ...firstStart(tempDataDir()), databaseUrl: 'postgres://db.example/mirador' }, afternoon, root)).toBeNull()
    expect(copyPreparedDemo({ ...firstStart(tempDataDir()), esdbConnectionString: 'kurrentdb://events.example:2113' }, afternoon, root)).toBeNull()

    const existing = tempDataDir()
    mkdirSync(embeddedStoreDir(existing))
    writeFileSync(join(embeddedStoreDir(existing), 'PG_VERSION'), '17\n')
    expect(copyPreparedDemo(firstStart(existing), afternoon, root)).toBeNull()
    expect(existsSync(join(embeddedStoreDir(existing), 'base'))).toBe(false)
  })

  it('a half-done copy from an interrupted start is replaced by a whole one', () => {
    const dataDir = tempDataDir()
    mkdirSync(`${embeddedStoreDir(dataDir)}.copying`)
    writeFileSync(join(`${embeddedStoreDir(dataDir)}.copying`, 'PG_VERSION'), 'half\n')
    expect(copyPreparedDemo(firstStart(dataDir), afternoon, root)).toBe(prepared)
    expect(existsSync(`${embeddedStoreDir(dataDir)}.copying`)).toBe(false)
    expect(existsSync(join(embeddedStoreDir(dataDir), 'base'))).toBe(true)
  })

  it('preparing again is a no-op; preparing another day replaces the older one', async () => {
    expect(await prepareDemo(demo, root)).toBe(prepared)
    const later = { ...demo, listings: 112, anchor: new Date('2026-03-11T00:00:00.000Z') }
    const next = await prepareDemo(later, root)
    expect(next).toBe(preparedDemoDir(later, root))
    expect([existsSync(prepared), existsSync(next)]).toEqual([false, true])
  }, 120_000)
})
