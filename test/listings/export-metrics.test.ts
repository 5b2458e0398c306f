import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { listingFeedOn } from '../../src/listings/feed-deps.ts'
import { syncRoutes } from '../../src/listings/routes.ts'
import { type ExportSample, noMetrics } from '../../src/metrics/port.ts'
import { openPglite } from '../../src/db/pglite.ts'
import { eventually } from '../support/eventually.ts'
import { type Market, mountedFetch, openMarket } from '../support/market.ts'

/**
 * An export reads at most one chunk ahead of what the client has taken, and reports how it
 * ended: read to the end (`completed`) or left by the client (`cut`), with the listings and bytes
 * sent until then. Chunks of 10 listings here, so that a client can leave in the middle.
 */
describe('an export read in chunks, and its report', () => {
  let market: Market
  const samples: ExportSample[] = []
  let fetch: ReturnType<typeof mountedFetch>
  beforeAll(async () => {
    market = await openMarket({ name: 'pglite', open: () => openPglite(), create: () => Promise.reject(new Error('unused')) }, 112, 'export-chunks')
    const feed = listingFeedOn(market, { ...noMetrics, exported: (sample) => samples.push(sample) }, { exportChunk: 10 })
    fetch = mountedFetch(market, syncRoutes, feed)
  })
  afterAll(async () => market?.close())

  it('reports a whole export as completed, with its listings and bytes', async () => {
    samples.length = 0
    const body = await (await fetch('/listings/export')).text()
    const listings = body.trimEnd().split('\n').length - 1
    expect(listings).toBeGreaterThan(30)
    expect(samples).toEqual([{ format: 'ndjson', completed: true, listings, bytes: Buffer.byteLength(body), seconds: expect.any(Number) }])
  })

  it('stops reading when the client leaves, and reports the export as cut after what was sent', async () => {
    samples.length = 0
    const reader = (await fetch('/listings/export?format=csv')).body!.getReader()
    await reader.read()
    await reader.cancel()
    await eventually('the cut export is reported', async () => samples.length > 0)
    expect(samples).toHaveLength(1)
    expect(samples[0]).toMatchObject({ format: 'csv', completed: false })
    expect(samples[0]!.listings).toBeLessThan(40)
    // The server goes on answering: a whole export after the cut one.
    expect((await (await fetch('/listings/export?format=csv')).text()).split('\r\n').length).toBeGreaterThan(30)
  })
})
