import { join } from 'node:path'
import { afterAll, describe, expect, test } from 'vitest'
import { generationTables, listGenerations } from '../../projections/engine/generations.ts'
import { type ListingsTables, listingsProjection } from '../../projections/listings/projection.ts'
import { openPglite } from '../../src/db/pglite.ts'
import type { Db } from '../../src/db/port.ts'
import { openPostgres } from '../../src/db/postgres.ts'
import { seedDemo } from '../../src/demo/seed.ts'
import { openSqlEventStore } from '../../src/eventstore/sql-event-store.ts'
import { runOperatorCommand } from '../../src/operator/commands.ts'
import { cryptoRandom, systemClock } from '../../src/shared/random.ts'
import { listZones } from '../support/sql-zone-answers.ts'
import { databaseTargets, isolatedDatabaseUrl, uniqueSchema } from '../support/databases.ts'
import { buildListingsV1 } from '../projections/listings-v1-store.ts'
import { ANCHOR } from '../support/market.ts'
import { initialisedDataDir, type RunningServer, startServer } from '../support/server.ts'

type Json = Record<string, any>
type Answer = { path: string; status: number; body: Json; at: number; generation: string | null }

/**
 * Blue/green on the real server under a steady load of API requests: an upgrade of a store built
 * by listings version 1 (the server starts serving at once and switches when version 2 is built)
 * and `projections rebuild listings` from the CLI. No request may fail, and none may come back
 * empty or half-built: every answer is one the old or the new generation gives in full.
 */

const PATHS = ['/api/v1/zones?country=BZ', '/api/v1/zone/zona-1?country=BZ', '/api/v1/listings?country=BZ&limit=5&sort=price_asc']

/** Three clients polling PATHS in turn until `stop()`; returns every answer. */
function load(server: RunningServer, key: string) {
  const answers: Answer[] = []
  let stopped = false
  const client = async (offset: number) => {
    for (let i = offset; !stopped; i++) {
      const path = PATHS[i % PATHS.length]!
      const response = await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${key}` } })
      answers.push({ path, status: response.status, body: (await response.json()) as Json, at: Date.now(), generation: response.headers.get('mirador-generation') })
    }
  }
  const clients = [0, 1, 2].map(client)
  return {
    answers,
    async stop() {
      stopped = true
      await Promise.all(clients)
      return answers
    },
  }
}

/** An answer without what depends on the moment it was asked (days on market). */
const stable = (body: Json): Json => JSON.parse(JSON.stringify(body, (k, v) => (k === 'median_dom' || k === 'days_on_market' ? undefined : v)))

/** What /zones answers from a given generation's tables, at any moment (days on market left out). */
async function zonesOf(db: Db, generation: { version: number; build: number }, tables: ListingsTables) {
  const zones = await listZones(db, 'BZ', new Date(), { projection: 'listings', ...generation, id: `v${generation.version}.${generation.build}`, tables })
  return stable({ ok: true, country: 'BZ', count: zones.length, zones })
}

for (const target of databaseTargets('blue/green under load')) {
  describe(`blue/green on the real server under load (${target.name})`, () => {
    const dataDir = initialisedDataDir('mirador-bluegreen-')
    const schema = uniqueSchema('bg')
    const env: Record<string, string> = { DATA_DIR: dataDir, ACCESS_LOG: 'off' }
    if (target.name === 'postgres') env.DATABASE_URL = isolatedDatabaseUrl(schema)!
    const open = () => (target.name === 'postgres' ? openPostgres(process.env.DATABASE_URL!, { schema }) : openPglite(join(dataDir, 'pglite')))
    let server: RunningServer | undefined
    let key = ''
    afterAll(async () => {
      await server?.stop()
      if (target.name === 'postgres') {
        const db = await openPostgres(process.env.DATABASE_URL!, { max: 1 })
        await db.exec(`drop schema if exists ${schema} cascade`)
        await db.close()
      }
    })

    // Slow by nature, this and the next: a whole generation built beside a server under load (17-50 s; past 60 s on the embedded store beside heavy load).
    test('a store built by listings v1 is served from the first request and switches to v6 when it is built: no failed, no empty answer', async () => {
      // The store as version 1 left it, with an owner and a key (recorded as events, as the CLI would).
      const db = await open()
      const store = await openSqlEventStore(db)
      await seedDemo(store, { seed: 'bluegreen', listings: 2500, anchor: ANCHOR })
      await buildListingsV1(db, store)
      const ctx = { db, store, runner: undefined as never, clock: systemClock, random: cryptoRandom, progress: () => {} }
      await runOperatorCommand(ctx, 'owner create', { id: 'root', tier: 'admin' })
      key = ((await runOperatorCommand(ctx, 'key issue', { owner: 'root', scopes: ['read'], actor: 'root' })) as { key: string }).key
      await store.close()
      await db.close()

      server = await startServer(env)
      const traffic = load(server, key)
      const liveLine = () => server!.output().split('\n').find((l) => l.includes('"event":"generation_live"') && l.includes('"projection":"listings"'))
      const deadline = Date.now() + 60_000
      while (!liveLine() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
      const promotedAt = Date.now()
      while (Date.now() - promotedAt < 1000) await new Promise((r) => setTimeout(r, 50))
      const answers = await traffic.stop()

      // It listened before version 5 went live: it did not wait for the build.
      const output = server.output()
      expect(liveLine()).toContain('"generation":"v6.1"')
      expect(output.indexOf('"event":"listening"')).toBeLessThan(output.indexOf('"event":"generation_live"'))
      expect(answers.filter((a) => a.status !== 200)).toEqual([])
      expect(answers.length).toBeGreaterThan(20)

      // Every /zones answer is the whole of v1's or of v6's; the last ones are v6's.
      await server.stop()
      const check = await open()
      try {
        const rows = await listGenerations(check, ['listings'])
        const v1 = rows.find((g) => g.version === 1)!
        const v6 = rows.find((g) => g.version === 6)!
        expect([v1.state, v6.state]).toEqual(['previous', 'live'])
        const [old, fresh] = [await zonesOf(check, v1, generationTables(listingsProjection, v1)), await zonesOf(check, v6, generationTables(listingsProjection, v6))]
        expect(old.count).toBeGreaterThanOrEqual(12)
        const zones = answers.filter((a) => a.path.includes('/zones?'))
        for (const answer of zones) expect([old, fresh]).toContainEqual(stable(answer.body))
        expect(stable(zones.at(-1)!.body)).toEqual(fresh)
        const listings = answers.filter((a) => a.path.includes('/listings?'))
        expect(new Set(listings.map((a) => a.body.total)).size).toBe(1)
        expect(listings.every((a) => a.body.total > 0 && a.body.listings.length === 5)).toBe(true)
        expect(answers.filter((a) => a.path.includes('/zone/')).every((a) => a.body.n_active > 0)).toBe(true)
      } finally {
        await check.close()
      }
    }, 180_000)

    test('`projections rebuild listings` under load: every answer stays the same, whole, and the names are the ones status prints', async () => {
      server = await startServer(env)
      const before = await Promise.all(
        PATHS.map(async (path) => stable((await (await fetch(`${server!.url}${path}`, { headers: { authorization: `Bearer ${key}` } })).json()) as Json)),
      )
      const traffic = load(server, key)
      const rebuilt = await server.cli('projections', 'rebuild', 'listings')
      await new Promise((r) => setTimeout(r, 1000))
      const answers = await traffic.stop()
      expect(rebuilt.code, rebuilt.stderr).toBe(0)
      expect(rebuilt.stdout).toMatch(/^listings v6\.2: \d+ events in [\d.]+ s \(\d+ events\/s\), promoted \(live\)$/m)

      expect(answers.filter((a) => a.status !== 200)).toEqual([])
      expect(answers.length).toBeGreaterThan(20)
      for (const answer of answers) expect(stable(answer.body)).toEqual(before[PATHS.indexOf(answer.path)])

      const status = JSON.parse((await server.cli('projections', 'status', '--json')).stdout) as { generations: Json[] }
      expect(status.generations.filter((g) => g.projection === 'listings').map((g) => [g.generation, g.state])).toEqual([
        ['v6.2', 'live'],
        ['v6.1', 'previous'],
        ['v1.1', 'retired'],
      ])
      // Each answer named the generation it came from: the first one's until the promotion, the rebuilt one's after; and a
      // settled answer names the live generation's position, as status prints it.
      expect(new Set(answers.map((a) => a.generation))).toEqual(new Set(['v6.1', 'v6.2']))
      expect(answers.at(-1)!.generation).toBe('v6.2')
      const live = status.generations.find((g) => g.projection === 'listings' && g.state === 'live')!
      for (const path of PATHS) {
        const response = await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${key}` } })
        expect([response.headers.get('mirador-generation'), Number(response.headers.get('mirador-position'))]).toEqual([live.generation, live.position])
      }
      // Hold, compare, promote and roll back from the CLI; the key keeps working across every switch of api_keys.
      const held = await server.cli('projections', 'rebuild', 'api_keys', '--hold')
      expect(held.stdout).toMatch(/^api_keys v2\.2: 1 event in [\d.]+ s \(\d+ events\/s\), held: `projections diff api_keys`, then `projections promote api_keys`$/m)
      expect((await server.cli('projections', 'diff', 'api_keys')).stdout).toBe('api_keys v2.1 (live) → v2.2 (held): 0 row(s) differ (keys 0 of 1)\n')
      expect((await server.cli('projections', 'promote', 'api_keys')).stdout).toMatch(/^api_keys: v2\.2 is live \(was v2\.1\)/)
      expect((await server.cli('projections', 'rollback', 'api_keys')).stdout).toMatch(/^api_keys: v2\.1 is live \(was v2\.2\)/)
      const refused = await server.cli('projections', 'promote', 'nonsense')
      expect([refused.code, refused.stderr]).toEqual([2, expect.stringMatching(/unknown projection "nonsense"; known: owners, api_keys, listings, briefing_cache, briefing_usage/)])
      for (const name of new Set(status.generations.map((g) => g.projection))) {
        const pruned = await server.cli('projections', 'prune', String(name), '--json')
        expect(pruned.code, `${name}: ${pruned.stderr}`).toBe(0)
      }
      const health = (await (await fetch(`${server.url}/api/v1/health`, { headers: { authorization: `Bearer ${key}` } })).json()) as Json
      expect(health.projections).toContainEqual({ projection: 'listings', generation: 'v6.2', state: 'live', lag_events: 0, lag_seconds: 0 })
    }, 180_000)
  })
}
