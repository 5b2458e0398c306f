import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { openPglite } from '../../src/db/pglite.ts'
import { DEFAULT_FX } from '../../src/domain/market/fx.ts'
import { ingestRecords } from '../../src/listings/ingest.ts'
import { webhookWorkerOn } from '../../src/services.ts'
import { cryptoRandom, systemClock } from '../../src/shared/random.ts'
import type { DeliveryOptions, Lookup } from '../../src/webhooks/outbound.ts'
import { startTestSystem, TEST_SIGNING_KEY, type TestSystem } from '../support/app.ts'
import { aRecord } from '../support/market.ts'
import { TestReceiver } from '../support/webhook-receiver.ts'

/**
 * Webhooks never reach a private address, as an attacker would try it through the API: each target
 * of issue 31's list is refused when subscribing (production settings: https, public addresses only),
 * and what only shows at delivery — a name that resolves to a private address, a redirect to one —
 * is refused then, recorded among the deliveries, with no request sent there. The guard's own cases
 * (every address range, every URL form): test/webhooks/outbound.test.ts.
 */

type Json = Record<string, any>

describe('webhooks and private addresses', () => {
  let production: TestSystem
  let key: string

  beforeAll(async () => {
    production = await startTestSystem(await openPglite(), { webhookDelivery: { allowHttp: false } })
    key = (await production.ownerWithKey('mallory', 'enterprise')).key
  })
  afterAll(() => production.close())

  const subscribe = async (system: TestSystem, as: string, url: string) => {
    const response = await system.request('/api/v1/webhooks', { method: 'POST', key: as, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ url, events: ['listing.listed'] }) })
    return { status: response.status, body: (await response.json()) as Json, requestId: response.headers.get('x-request-id') }
  }

  test.each([
    ['http://127.0.0.1/hook', /https/],
    ['https://127.0.0.1/hook', /127\.0\.0\.1 is .*loopback/],
    ['https://[::1]/hook', /::1 is .*loopback/],
    ['https://169.254.169.254/latest/meta-data', /169\.254\.169\.254/],
    ['https://10.1.2.3/hook', /10\.1\.2\.3 is .*private/],
    ['https://0x7f.1/hook', /127\.0\.0\.1/],
    ['https://localhost/hook', /this machine or a private network/],
    ['https://metadata.google.internal/computeMetadata', /this machine or a private network/],
    [`https://hooks.example.com/${'a'.repeat(2100)}`, /at most 2048 characters/],
    ['https://user:pass@hooks.example.com/hook', /user name or password/],
    ['file:///etc/passwd', /https URL/],
  ])('subscribing %s is refused: 400 invalid_request on url, saying why', async (url, why) => {
    const { status, body, requestId } = await subscribe(production, key, url)
    expect(status).toBe(400)
    expect(body).toMatchObject({ ok: false, error: 'invalid_request' })
    expect(body.details).toHaveLength(1)
    expect(body.details[0].field).toBe('url')
    expect(body.details[0].message).toMatch(why)
    expect(requestId).toBeTruthy()
    expect(((await (await production.request('/api/v1/webhooks', { key })).json()) as Json).count).toBe(0)
  })

  describe('at delivery', () => {
    let system: TestSystem
    let owner: string
    let receiver: TestReceiver
    const fetched: string[] = []
    /** Names the attacker controls: one resolving to a private address, one to a public address that answers with a redirect. */
    const lookup: Lookup = async (name) =>
      name === 'rebound.attacker.example' ? [{ address: '10.0.0.7', family: 4 }] : name === 'redirect.attacker.example' ? [{ address: '93.184.216.34', family: 4 }] : []
    let options: DeliveryOptions

    beforeAll(async () => {
      receiver = await new TestReceiver('').start()
      receiver.behave = () => ({ status: 302, location: 'http://169.254.169.254/latest/meta-data/iam' })
      options = {
        allowHttp: true,
        lookup,
        // The network, as far as these specs need one: the redirecting name reaches the local receiver; anything else is recorded and fails.
        fetch: async (url, init) => {
          fetched.push(url.href)
          if (url.hostname !== 'redirect.attacker.example') throw new Error(`no route to ${url.hostname}`)
          return fetch(receiver.url, init)
        },
      }
      // Production's address rules; plain http allowed so that the redirecting receiver can be a local one behind a public name.
      system = await startTestSystem(await openPglite(), { webhookDelivery: options })
      owner = (await system.ownerWithKey('mallory', 'enterprise')).key
    })
    afterAll(async () => {
      await receiver.stop()
      await system.close()
    })

    test('a name that resolves to a private address is accepted when subscribing, then refused at each delivery, and nothing is sent', async () => {
      const { status, body } = await subscribe(system, owner, 'http://rebound.attacker.example/hook')
      expect(status).toBe(201)
      await ingestRecords(system.storage.store, [aRecord({ source_id: 'bait-1', verified_at: '2026-03-01T00:00:00.000Z' })], DEFAULT_FX)
      await system.settle()
      const worker = webhookWorkerOn(system.storage, system.zones, TEST_SIGNING_KEY, options, systemClock, cryptoRandom)
      for (let i = 0; i < 10 && (await worker.round()); i++);
      const deliveries = ((await (await system.request(`/api/v1/webhooks/${body.webhook.id}/deliveries`, { key: owner })).json()) as Json).deliveries as Json[]
      expect(deliveries[0]).toMatchObject({ outcome: 'refused', status: null, detail: expect.stringMatching(/rebound\.attacker\.example resolves to 10\.0\.0\.7, .*private/) })
      expect(fetched.filter((url) => url.includes('rebound'))).toEqual([])
      const ping = (await (await system.request(`/api/v1/webhooks/${body.webhook.id}/ping`, { key: owner, method: 'POST' })).json()) as Json
      expect(ping.delivery).toMatchObject({ outcome: 'refused' })
      expect(fetched.filter((url) => url.includes('rebound'))).toEqual([])
    })

    test('a redirect to the metadata address is not followed: the attempt fails as redirected, and only the subscribed URL was asked', async () => {
      const { body } = await subscribe(system, owner, 'http://redirect.attacker.example/hook')
      fetched.length = 0
      const ping = (await (await system.request(`/api/v1/webhooks/${body.webhook.id}/ping`, { key: owner, method: 'POST' })).json()) as Json
      expect(ping.delivery, JSON.stringify(ping)).toMatchObject({ outcome: 'redirected', status: 302, detail: expect.stringContaining('169.254.169.254') })
      expect(fetched).toEqual(['http://redirect.attacker.example/hook'])
      expect(receiver.requests).toHaveLength(1)
    })
  })
})
