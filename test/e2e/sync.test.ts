import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, describe, expect, test } from 'vitest'
import { eventually } from '../support/eventually.ts'
import { type RunningServer, startServer, tempDataDir } from '../support/server.ts'
import { serverPair } from '../support/server-pair.ts'

/**
 * "Staying in sync" as a data engineer does it, on two real server processes sharing one PostgreSQL:
 * export once from one server, then follow the changes while the operator ingests feeds through the
 * other, with the following server restarted in the middle and the cursor carried across processes.
 * At the end what the client holds is exactly a new export and exactly what /listings pages show.
 */

const { DATABASE_URL, REDIS_URL } = process.env
if (!DATABASE_URL || !REDIS_URL) console.warn('[skipped] the change feed across processes: needs DATABASE_URL and REDIS_URL')

type Json = Record<string, any>
const COUNTRIES = ['GT', 'SV', 'HN', 'CR', 'BZ', 'DO', 'PA', 'BR']

/** A feed of `count` broker listings, each told in up to five lines (new, verified, repriced, moved, delisted or relisted). */
function feed(prefix: string, count: number, day: number): string {
  const lines: string[] = []
  for (let i = 0; i < count; i++) {
    const base = {
      source: i % 9 === 0 ? 'scraped' : 'broker', source_id: `${prefix}-${i}`, country: COUNTRIES[i % 8], zone: `Zona ${1 + (i % 4)}`,
      operation: 'Venta', property_type: 'Apartamento', price: 100_000 + i, currency: 'USD', area_m2: 80, bedrooms: 2, bathrooms: 1,
      title: `Apartamento ${prefix} ${i}`, broker: i % 9 === 0 ? null : { id: 'sync-brk', name: 'Corredora Sync' }, url: null,
      listed_at: '2026-11-01T00:00:00Z', verified_at: i % 3 === 0 ? null : '2026-11-02T00:00:00Z', status: 'active',
    }
    const at = (step: number) => `2026-11-${String(day).padStart(2, '0')}T${String(step).padStart(2, '0')}:${String(i % 60).padStart(2, '0')}:00Z`
    lines.push(JSON.stringify({ ...base, observed_at: at(1) }))
    if (i % 3 === 0) lines.push(JSON.stringify({ ...base, verified_at: at(2), observed_at: at(2) }))
    if (i % 2 === 0) lines.push(JSON.stringify({ ...base, price: 90_000 + i, observed_at: at(3) }))
    if (i % 5 === 0) lines.push(JSON.stringify({ ...base, zone: 'Zona 5', observed_at: at(4) }))
    if (i % 7 === 0) lines.push(JSON.stringify({ ...base, status: 'delisted', observed_at: at(5) }))
  }
  return `${lines.join('\n')}\n`
}

describe.skipIf(!DATABASE_URL || !REDIS_URL)('the change feed across two server processes and a restart', () => {
  const { servers, keyIds, cli } = serverPair('sync', DATABASE_URL!, REDIS_URL!, { DEMO_SEED: 'on', DEMO_LISTINGS: '300' })
  let key = ''
  const held = new Map<string, Json>()
  let cursor = ''

  const get = (server: RunningServer, path: string) => fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${key}` }, signal: AbortSignal.timeout(30_000) })
  const exported = async (server: RunningServer) => {
    const lines = (await (await get(server, '/api/v1/listings/export')).text()).trimEnd().split('\n').map((text) => JSON.parse(text) as Json)
    const end = lines.pop()!
    return { cursor: end.cursor as string, listings: new Map(lines.map((listing) => [listing.id as string, listing])) }
  }
  /** Reads pages of changes from `server` until caught up, applying each to what the client holds; a gap or a duplicate fails. */
  const follow = async (server: RunningServer) => {
    for (let more = true; more; ) {
      const response = await get(server, `/api/v1/listings/changes?after=${cursor}&limit=50`)
      expect(response.status).toBe(200)
      const page = (await response.json()) as Json
      for (const change of page.changes as Json[]) {
        expect(held.has(change.listing_id), `${change.kind} ${change.listing_id}`).toBe(change.kind !== 'listed')
        if (change.kind === 'removed') held.delete(change.listing_id)
        else held.set(change.listing_id, change.listing)
      }
      ;[cursor, more] = [page.next_cursor, page.more]
    }
  }
  /** Follows from `server` for as long as `work` runs, then until caught up. */
  const followWhile = async (server: RunningServer, work: Promise<unknown>) => {
    let done = false
    const finished = work.finally(() => (done = true))
    while (!done) {
      await follow(server)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    await finished
  }
  const ingest = async (server: RunningServer, name: string, text: string) => {
    const file = join(tempDataDir('mirador-sync-feed-'), `${name}.ndjson`)
    writeFileSync(file, text)
    const run = await server.cli('ingest', file)
    expect(run.code, run.stderr).toBe(0)
  }

  beforeAll(async () => {
    await cli('owner', 'create', '--id', 'warehouse', '--tier', 'enterprise')
    const issued = await cli<{ key: string; key_id: string }>('key', 'issue', '--owner', 'warehouse', '--scopes', 'read', '--actor', 'warehouse')
    keyIds.push(issued.key_id)
    key = issued.key
    for (const server of servers) await eventually(`${server.url} knows the key`, async () => (await get(server, '/api/v1/health')).status === 200)
  })

  test('an export from one server, then the changes while the other ingests, across a restart, give exactly the inventory', async () => {
    const [a, b] = servers as [RunningServer, RunningServer]
    const first = await exported(b)
    for (const [id, listing] of first.listings) held.set(id, listing)
    cursor = first.cursor

    await followWhile(b, ingest(a, 'first', feed('one', 120, 10)))
    // b restarts on the same database; the client carries its cursor on, to b and then to a.
    await b.stop()
    servers[1] = await startServer(b.env)
    await eventually('the restarted server answers', async () => (await get(servers[1]!, '/api/v1/health')).status === 200)
    await followWhile(servers[1]!, ingest(a, 'second', feed('two', 120, 11) + feed('one', 60, 12)))
    await follow(a)

    const now = await exported(a)
    expect(held).toEqual(now.listings)
    expect(cursor).toBe(now.cursor)
    let total = 0
    for (const country of COUNTRIES) total += ((await (await get(a, `/api/v1/listings?country=${country}&limit=1`)).json()) as Json).total
    expect(held.size).toBe(total)
  }, 240_000)
})
