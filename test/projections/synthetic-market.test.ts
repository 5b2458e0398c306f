import { describe, expect, it } from 'vitest'
import { checkLoader } from '../../bench/listings-load.ts'

/**
 * The synthetic market the benchmarks load straight into the listings read model
 * (projections/listings/synthetic.ts) is what the projection writes for the same listings told as
 * feed lines through the event store: listings, history, zones and change rows (these by their
 * order within each listing, their positions being synthetic). PostgreSQL only: the loader is the
 * benchmarks', which run there.
 */
const DATABASE_URL = process.env.DATABASE_URL

describe.skipIf(!DATABASE_URL)('the synthetic market against the listings projection', () => {
  it('writes, for 1,500 listings, exactly the rows the projection writes from their events', async () => {
    const compared = await checkLoader(DATABASE_URL!, 1500)
    expect(compared.listings).toBe(1500)
    // Most listings become public (~70 %), some change price or are delisted after.
    expect(compared.changes).toBeGreaterThan(1000)
    expect(compared.events).toBeGreaterThan(compared.listings)
  })
})

if (!DATABASE_URL) console.warn('[skipped] the synthetic market against the listings projection: DATABASE_URL is not set')
