import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { openPglite } from '../../src/db/pglite.ts'
import { type TestSystem, startTestSystem } from '../support/app.ts'
import { eventually } from '../support/eventually.ts'

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

  test('admin: every live generation, its state and its lag in events and seconds, as last measured', async () => {
    const caughtUp = ['owners', 'api_keys', 'listings', 'briefing_cache', 'briefing_usage', 'webhooks'].map((projection) => ({
      projection,
      generation: projection === 'listings' ? 'v6.1' : projection === 'api_keys' ? 'v2.1' : 'v1.1',
      state: 'live',
      lag_events: 0,
      lag_seconds: 0,
    }))
    // Measured in the background, every half second: the keys just issued are soon applied everywhere.
    await eventually('the lag is measured after the keys were issued', async () => JSON.stringify((await health(admin)).projections) === JSON.stringify(caughtUp))
  })

  test('admin: the dependencies (none for the embedded store, which cannot go away)', async () => {
    expect((await health(admin)).dependencies).toEqual([])
  })

  test('a held build is listed beside the live generation', async () => {
    await system.run('projections rebuild', { names: ['owners'], hold: true })
    const owners = async () =>
      ((await health(admin)).projections as { projection: string; generation: string; state: string }[])
        .filter((p) => p.projection === 'owners')
        .map((p) => `${p.generation} ${p.state}`)
    // Measured every half second, also while the build runs (the embedded store lets the event loop
    // turn between its statements, decision 0126): wait for a measure taken once it is held.
    await eventually('the held build is measured', async () => (await owners()).includes('v1.2 held'))
    expect(await owners()).toEqual(['v1.1 live', 'v1.2 held'])
  })

  test('other tiers do not see it', async () => {
    const body = await health(pro)
    expect(body.ok).toBe(true)
    expect(body).not.toHaveProperty('projections')
    expect(body).not.toHaveProperty('dependencies')
  })
})

describe('/livez and /readyz: no key, no data', () => {
  let system: TestSystem
  beforeAll(async () => {
    system = await startTestSystem(await openPglite())
  })
  afterAll(() => system?.close())

  test('/livez answers while the process serves; /readyz once the read models are measured caught up', async () => {
    const live = await system.request('/livez')
    expect(live.status).toBe(200)
    expect(await live.json()).toEqual({ ok: true })
    await eventually('ready', async () => (await system.request('/readyz')).status === 200)
    expect(await (await system.request('/readyz')).json()).toEqual({ ok: true })
  })

  test('other methods are refused with 405 and Allow, without a key', async () => {
    const refused = await system.request('/readyz', { method: 'POST' })
    expect(refused.status).toBe(405)
    expect(refused.headers.get('allow')).toContain('GET')
  })
})
