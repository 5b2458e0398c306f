import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { openPglite } from '../../src/db/pglite.ts'
import { DEFAULT_FX } from '../../src/domain/market/fx.ts'
import { ingestRecords } from '../../src/listings/ingest.ts'
import { type TestSystem, startTestSystem } from '../support/app.ts'
import { aRecord } from '../support/market.ts'

/**
 * /health's quota comes from a copy of the usage read model in memory: a charge shows once the read
 * model has it and the copy has read it again (settled), and no database is asked per request.
 */
describe('/health reports this month’s quota from memory', () => {
  let system: TestSystem
  let pro = ''
  beforeAll(async () => {
    system = await startTestSystem(await openPglite(), { quotas: { pro: 7, enterprise: 70 } })
    pro = (await system.ownerWithKey('client', 'pro')).key
    // A zone to brief on.
    const records = Array.from({ length: 5 }, (_, i) => aRecord({ source_id: `quota-${i}`, zone: 'Zona 1', price: 1_000_000 + i * 10_000 }))
    await ingestRecords(system.storage.store, records, DEFAULT_FX)
    await system.settle()
  })
  // The last test closed the database under the system.
  afterAll(() => system?.close().catch(() => {}))

  const health = async () => {
    const response = await system.request('/api/v1/health', { key: pro })
    return { status: response.status, quota: ((await response.json()) as { quota: unknown }).quota }
  }

  test('a charge shows once the usage read model and its copy have it', async () => {
    expect((await health()).quota).toEqual({ used: 0, quota: 7, unlimited: false })
    const briefing = await system.request('/api/v1/briefings/investor', {
      key: pro,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ zone: 'Zona 1', profile: 'balanced', country: 'GT' }),
    })
    expect({ status: briefing.status, body: await briefing.text() }).toMatchObject({ status: 200 })
    await system.settle()
    expect((await health()).quota).toEqual({ used: 1, quota: 7, unlimited: false })
  })

  test('no database is asked: /health still answers the quota with the database closed', async () => {
    await system.settle()
    const before = await health()
    system.usage.stop()
    system.keys.stop()
    await system.storage.db.close()
    expect(await health()).toEqual(before)
  })
})
