import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { openPglite } from '../../src/db/pglite.ts'
import { buildApp } from '../../src/app.ts'
import { openKeyIndex, openListingInventory, openReadyZones } from '../../src/read-models.ts'
import { webhookServiceOn } from '../../src/services.ts'
import { listingFeedOn } from '../../src/listings/feed-deps.ts'
import { storageOn, type Storage } from '../../src/storage.ts'
import type { ReadyZones } from '../../projections/listings/ready-zones.ts'
import { memoryRateLimiter } from '../../src/ratelimit/memory.ts'
import { runOperatorCommand } from '../../src/operator/commands.ts'
import { cryptoRandom, systemClock } from '../../src/shared/random.ts'
import type { KeyIndex } from '../../projections/owners-and-keys/key-index.ts'

describe('a bug inside a handler', () => {
  let storage: Storage
  let keys: KeyIndex
  let zones: ReadyZones
  const logged: string[] = []
  let key = ''

  beforeAll(async () => {
    storage = await storageOn(await openPglite())
    await storage.runner.start(() => {})
    keys = await openKeyIndex(storage, () => {})
    zones = openReadyZones(storage, () => {})
    const ctx = { ...storage, clock: systemClock, random: cryptoRandom, progress: () => {} }
    await runOperatorCommand(ctx, 'owner create', { id: 'acme', tier: 'enterprise' })
    key = ((await runOperatorCommand(ctx, 'key issue', { owner: 'acme', scopes: ['read'], actor: 'acme' })) as { key: string }).key
    await storage.runner.catchUp()
    await keys.settled()
  })
  afterAll(async () => {
    keys.stop()
    zones.stop()
    await storage.close()
  })

  test('answers 500 internal with the envelope, no stack trace, and logs the cause with the request id', async () => {
    const app = buildApp({
      keys,
      limiter: memoryRateLimiter(),
      limits: { pro: 100, enterprise: 1000 },
      clock: systemClock,
      log: { info: () => {}, error: (event, fields) => logged.push(JSON.stringify({ event, ...fields })) },
      accessLog: true,
      zones,
      inventory: await openListingInventory(storage, () => {}),
      feed: listingFeedOn(storage),
      webhooks: webhookServiceOn(storage, null, { allowHttp: false }, systemClock, cryptoRandom),
      briefings: {
        brief: async () => {
          throw new Error('not used here')
        },
        usage: async () => {
          throw new Error('not used here')
        },
      },
      quota: () => {
        throw new TypeError('quota store exploded at /srv/secret/path.ts:12')
      },
    })
    const response = await app.handle(
      new Request('http://localhost/api/v1/health', { headers: { authorization: `Bearer ${key}` } }),
    )
    expect(response.status).toBe(500)
    const text = await response.text()
    expect(JSON.parse(text)).toMatchObject({ ok: false, error: 'internal' })
    expect(text).not.toMatch(/secret|TypeError|at .*\.ts/)
    const requestId = response.headers.get('x-request-id')!
    expect(logged.some((line) => line.includes(requestId) && line.includes('quota store exploded'))).toBe(true)
  })
})
