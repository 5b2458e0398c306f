/**
 * A baseline for bench/listings.ts: a bare `Bun.serve` running the same listing search (same
 * parsing, same in-memory inventory loaded from the same PostgreSQL) with no framework, no
 * authentication, no rate limiter and no response validation. Its gap to the real server is what those cost per request.
 */
import { openPostgres } from '../src/db/postgres.ts'
import { ListingInventory } from '../projections/listings/inventory.ts'
import { listingSearchOf } from '../src/listings/search-query.ts'

const databaseUrl = process.env.DATABASE_URL
if (!databaseUrl) throw new Error('DATABASE_URL is not set')
const db = await openPostgres(databaseUrl)
// Nothing is ingested during a benchmark: the inventory needs no runner to follow.
const inventory = await ListingInventory.open(db, { onLiveAdvanced: () => () => {} })

const server = Bun.serve({
  hostname: '127.0.0.1',
  port: Number(process.env.PORT ?? 0),
  async fetch(request) {
    try {
      return Response.json(await inventory.search(listingSearchOf(request.url), new Date()))
    } catch (error) {
      return Response.json({ ok: false, message: String(error) }, { status: 400 })
    }
  },
})
console.log(JSON.stringify({ event: 'listening', port: server.port }))
process.on('SIGTERM', async () => {
  await server.stop(true)
  await db.close()
  process.exit(0)
})
