import { describe, expect, test } from 'vitest'
import { serverComponents } from '../../src/server-components.ts'

describe("the server's components, in start order (stopped in reverse)", () => {
  const names = serverComponents.names
  const before = (first: string, then: string) => expect(names.indexOf(first), `${first} before ${then}`).toBeLessThan(names.indexOf(then))

  test('the data directory is locked, then the ports are taken, before the store is opened: a port in use changes nothing on disk', () => {
    before('dataDir', 'lock')
    before('lock', 'port')
    before('port', 'storage')
    before('metricsPort', 'storage')
  })

  test('the demo market prepared at install is copied into the data directory once it is locked and the ports are taken, before the store opens', () => {
    before('lock', 'preparedDemo')
    before('port', 'preparedDemo')
    before('metricsPort', 'preparedDemo')
    before('preparedDemo', 'storage')
  })

  test('the read models in memory are loaded after the projections caught up, and stopped before the store closes', () => {
    for (const follower of ['keys', 'usage', 'zones', 'inventory']) {
      before('projections', follower)
      before('storage', follower)
    }
  })

  test('the API is served last, so it is the first stopped: requests in progress finish before anything they use stops', () => {
    expect(names.at(-1)).toBe('api')
  })
})
