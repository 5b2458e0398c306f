import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { openPglite } from '../../src/db/pglite.ts'
import { type TestSystem, startTestSystem } from '../support/app.ts'

describe('/health reports projection lag to admin keys only', () => {
  let system: TestSystem
  let admin = ''
  let pro = ''
  beforeAll(async () => {
    system = await startTestSystem(await openPglite())
    admin = (await system.ownerWithKey('boss', 'admin')).key
    pro = (await system.ownerWithKey('client', 'pro')).key
  })
  afterAll(() => system?.close())

  const health = async (key: string) => (await (await system.request('/api/v1/health', { key })).json()) as Record<string, unknown>

  test('admin: every live generation, its state and its lag in events and seconds', async () => {
    expect((await health(admin)).projections).toEqual(
      ['owners', 'api_keys', 'listings', 'briefing_cache', 'briefing_usage'].map((projection) => ({
        projection,
        generation: projection === 'listings' ? 'v3.1' : 'v1.1',
        state: 'live',
        lag_events: 0,
        lag_seconds: 0,
      })),
    )
  })

  test('a held build is listed beside the live generation', async () => {
    await system.run('projections rebuild', { names: ['owners'], hold: true })
    await new Promise((resolve) => setTimeout(resolve, 1100)) // the figures are reused for a second
    expect(((await health(admin)).projections as { projection: string; generation: string; state: string }[]).filter((p) => p.projection === 'owners')).toEqual([
      expect.objectContaining({ generation: 'v1.1', state: 'live' }),
      expect.objectContaining({ generation: 'v1.2', state: 'held' }),
    ])
  })

  test('other tiers do not see it', async () => {
    const body = await health(pro)
    expect(body.ok).toBe(true)
    expect(body).not.toHaveProperty('projections')
  })
})
