import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadListings } from '../../bench/listings-load.ts'
import { openPostgres } from '../../src/db/postgres.ts'
import type { Db } from '../../src/db/port.ts'
import { REQUEST_BUDGET_MS } from '../../src/runtime/dependency.ts'
import { uniqueSchema } from '../support/databases.ts'
import { type RunningServer, startServer } from '../support/server.ts'

/**
 * GET /listings/export on the real server over PostgreSQL, whose calls are watched (each bounded by
 * the request's time budget, REQUEST_BUDGET_MS): an export that outlasts the budget, because its
 * client reads slowly, still reads every chunk to the end. Each chunk is a turn of its own
 * (`nextTurn` in src/listings/export-listings.ts); were the chunks to share the request's budget,
 * the first chunk read after it ran out would be refused and the body cut short without its cursor line.
 * The market: 70,000 synthetic listings (~49,000 public, ~25 chunks, ~30 MB of NDJSON: more than
 * the loopback socket buffers hold, so the server must read chunks while the client pauses).
 */

const DATABASE_URL = process.env.DATABASE_URL
const LISTINGS = 70_000
/** Longer than the request's whole budget. */
const PAUSE_MS = REQUEST_BUDGET_MS + 1000
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe.skipIf(!DATABASE_URL)('an export slower than the request budget, on a watched PostgreSQL', () => {
  const schema = uniqueSchema('export_budget')
  let db: Db
  let server: RunningServer
  let key = ''
  let publicListings = 0

  beforeAll(async () => {
    db = await openPostgres(DATABASE_URL!, { schema })
    publicListings = (await loadListings(db, LISTINGS, () => {})).public
    const url = new URL(DATABASE_URL!)
    url.searchParams.set('search_path', schema)
    server = await startServer({ DATABASE_URL: url.toString(), ACCESS_LOG: 'off', RATE_LIMIT_ENTERPRISE: '1000000' }, { timeoutMs: 90_000 })
    const cli = async (...args: string[]) => {
      const result = await server.cli(...args, '--json')
      expect(result.code, result.stderr).toBe(0)
      return JSON.parse(result.stdout) as { key?: string }
    }
    await cli('owner', 'create', '--id', 'root', '--tier', 'admin')
    await cli('owner', 'create', '--id', 'acme', '--tier', 'enterprise')
    key = (await cli('key', 'issue', '--owner', 'acme', '--scopes', 'read', '--actor', 'root')).key!
  }, 180_000)

  afterAll(async () => {
    await server?.stop()
    await db?.exec(`drop schema if exists ${schema} cascade`)
    await db?.close()
  })

  it('reads every public listing to the cursor line when the client pauses longer than the budget', async () => {
    const started = performance.now()
    const response = await fetch(`${server.url}/api/v1/listings/export?format=ndjson`, {
      headers: { authorization: `Bearer ${key}`, 'accept-encoding': 'identity' },
    })
    expect(response.status).toBe(200)
    const reader = response.body!.getReader()
    const parts: Uint8Array[] = []
    const first = await reader.read()
    parts.push(first.value!)
    // The client stops reading: the server fills the socket's buffers and waits, past the budget.
    await sleep(PAUSE_MS)
    for (let part = await reader.read(); !part.done; part = await reader.read()) parts.push(part.value)
    const seconds = (performance.now() - started) / 1000
    expect(seconds).toBeGreaterThan(PAUSE_MS / 1000)

    const lines = Buffer.concat(parts).toString('utf8').trimEnd().split('\n')
    const last = JSON.parse(lines.at(-1)!) as { cursor?: string; count?: number }
    expect(last, `the body ends after ${lines.length} lines with ${lines.at(-1)!.slice(0, 200)}; server:\n${server.output().slice(-2000)}`).toEqual({
      cursor: response.headers.get('mirador-cursor'),
      count: publicListings,
    })
    expect(lines.length - 1).toBe(publicListings)
  }, 120_000)
})
