import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { openPglite } from '../../src/db/pglite.ts'
import { monitorServer } from '../../src/health-monitor.ts'
import { type Storage, storageOn } from '../../src/storage.ts'
import { eventually } from '../support/eventually.ts'

/**
 * /readyz and the read models the API answers from memory (decision 0125): the zone statistics and
 * the listings load in the background after the server starts to serve, and a request meanwhile waits
 * for them; the server says it is not ready until both are loaded, so that a load balancer sends
 * traffic to a server that answers at once.
 */
describe('readiness while the read models load into memory', () => {
  let storage: Storage
  beforeAll(async () => {
    storage = await storageOn(await openPglite(), { batches: 'all-or-nothing' })
    await storage.runner.start(() => {})
  })
  afterAll(() => storage?.close())

  /** A first load that ends when the test says so. */
  function loading(what: string) {
    let done!: () => void
    const firstLoaded = new Promise<void>((resolve) => (done = resolve))
    return { what, firstLoaded, done }
  }

  test('not ready, naming what is loading, until every one is loaded; then ready once the lag is measured', async () => {
    const [zones, listings] = [loading('zone statistics'), loading('listings')]
    const health = monitorServer(storage, [], [zones, listings])
    try {
      expect(health.notReady()).toBe('the zone statistics are being loaded into memory')
      zones.done()
      await eventually('the zones counted loaded', () => health.notReady() !== 'the zone statistics are being loaded into memory')
      expect(health.notReady()).toBe('the listings are being loaded into memory')
      listings.done()
      await eventually('ready', () => health.notReady() === null)
    } finally {
      health.stop()
    }
  })

  test('loaded in any order', async () => {
    const [zones, listings] = [loading('zone statistics'), loading('listings')]
    const health = monitorServer(storage, [], [zones, listings])
    try {
      listings.done()
      // The monitor's own callback on it ran before this await returns: it was registered first.
      await listings.firstLoaded
      expect(health.notReady()).toBe('the zone statistics are being loaded into memory')
      zones.done()
      await eventually('ready', () => health.notReady() === null)
    } finally {
      health.stop()
    }
  })
})
