import { Value } from '@sinclair/typebox/value'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { MAX_SUBSCRIPTIONS_PER_OWNER, webhooksStream } from '../../src/domain/webhooks/subscription.ts'
import { DeliveriesResponse, PingResponse, SubscribedResponse, WebhooksResponse } from '../../src/webhooks/schemas.ts'
import { derivedSecret } from '../../src/webhooks/signature.ts'
import { startTestSystem, TEST_SIGNING_KEY, type TestSystem } from '../support/app.ts'
import { databaseTargets } from '../support/databases.ts'
import { resolveRefs, schemaValidator } from '../support/openapi.ts'
import { TestReceiver } from '../support/webhook-receiver.ts'
import { eventually } from '../support/eventually.ts'

/**
 * The webhook routes as a subscriber meets them (POST, GET, DELETE /webhooks, deliveries, ping): the
 * happy path, every refusal with its status and body, and what another owner or a read-only key
 * cannot do. Deliveries themselves: test/webhooks/delivery.test.ts; SSRF: test/webhooks/ssrf.test.ts.
 */

type Json = Record<string, any>

const URL = 'https://hooks.example.com/a'
/** Bodies refused for a rule between fields that the document's schema states (each also in the table of refusals below). */
const RULE_REFUSALS = [{ url: URL, events: ['listing.listed'], zone: 'Zona 3' }]
const ACCEPTED = [
  { url: URL, events: ['listing.listed', 'listing.removed'] },
  { url: URL, events: ['listing.updated'], country: 'CR', zone: 'zona-3' },
  { url: URL, events: ['zone.statistics_changed'], country: 'GT', threshold_pct: 0.01 },
  { url: URL, events: ['zone.statistics_changed', 'listing.price_changed'], country: 'PA', zone: 'Zona 1', threshold_pct: 1000 },
]

for (const target of databaseTargets('webhook routes')) {
  describe(`webhook routes on ${target.name}`, () => {
    let system: TestSystem
    let key: string
    let readOnly: string
    let other: string
    let receiver: TestReceiver
    let secret = ''

    const call = async (method: string, path: string, body?: unknown, as = key) => {
      const response = await system.request(`/api/v1${path}`, {
        method,
        key: as,
        ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
      })
      return { status: response.status, headers: response.headers, body: (await response.json()) as Json }
    }
    const subscribe = (body: unknown, as = key) => call('POST', '/webhooks', body, as)

    beforeAll(async () => {
      system = await startTestSystem(await target.open())
      key = (await system.ownerWithKey('acme', 'enterprise')).key
      readOnly = (await system.ownerWithKey('reader', 'enterprise', ['read'])).key
      other = (await system.ownerWithKey('globex', 'enterprise')).key
      receiver = await new TestReceiver(() => secret).start()
    })
    afterAll(async () => {
      await receiver.stop()
      await system.close()
    })

    test('POST /webhooks answers 201 with the webhook, its Location and its secret, shown once and recorded nowhere', async () => {
      const { status, headers, body } = await subscribe({ url: receiver.url, events: ['zone.statistics_changed', 'listing.price_changed'], country: 'gt', zone: 'zona-10', threshold_pct: 2.5 })
      expect(status).toBe(201)
      expect(Value.Check(SubscribedResponse, body)).toBe(true)
      const id = body.webhook.id as string
      expect(headers.get('location')).toBe(`/api/v1/webhooks/${id}`)
      expect(headers.get('x-request-id')).toBeTruthy()
      expect(body.webhook).toMatchObject({
        url: receiver.url,
        // In the catalogue's order, whatever the order asked.
        events: ['listing.price_changed', 'zone.statistics_changed'],
        country: 'GT',
        zone: 'Zona 10',
        threshold_pct: 2.5,
        status: 'active',
        disabled_reason: null,
      })
      expect(body.secret).toBe(derivedSecret(TEST_SIGNING_KEY, id))
      secret = body.secret
      const recorded = JSON.stringify(await system.storage.store.readStream(webhooksStream('acme')))
      expect(recorded).toContain(id)
      expect(recorded).not.toContain(body.secret.slice(6))

      const listed = await call('GET', '/webhooks')
      expect(listed.status).toBe(200)
      expect(Value.Check(WebhooksResponse, listed.body)).toBe(true)
      expect(listed.body.webhooks.map((w: Json) => w.id)).toContain(id)
      expect(JSON.stringify(listed.body)).not.toContain(body.secret.slice(6))
      expect(listed.body.limit).toBe(MAX_SUBSCRIPTIONS_PER_OWNER)
    })

    test('a ping is signed, delivered now and listed among the deliveries', async () => {
      const { body: made } = await subscribe({ url: receiver.url, events: ['listing.listed'] })
      secret = made.secret
      const ping = await call('POST', `/webhooks/${made.webhook.id}/ping`)
      expect(ping.status).toBe(200)
      expect(Value.Check(PingResponse, ping.body)).toBe(true)
      expect(ping.body.delivery).toMatchObject({ type: 'webhook.ping', attempt: 1, outcome: 'delivered', status: 204 })
      const got = receiver.requests.at(-1)!
      expect(got).toMatchObject({ id: ping.body.delivery.webhook_id, type: 'webhook.ping', verified: true })
      expect(got.body.data).toEqual({ webhook_id: made.webhook.id })

      const deliveries = await call('GET', `/webhooks/${made.webhook.id}/deliveries`)
      expect(deliveries.status).toBe(200)
      expect(Value.Check(DeliveriesResponse, deliveries.body)).toBe(true)
      expect(deliveries.body.deliveries[0]).toEqual(ping.body.delivery)
    })

    test('a receiver that refuses is an outcome of the ping, not an error of the API', async () => {
      const { body: made } = await subscribe({ url: receiver.url, events: ['listing.removed'] })
      receiver.behave = () => ({ status: 500 })
      try {
        const ping = await call('POST', `/webhooks/${made.webhook.id}/ping`)
        expect(ping.status).toBe(200)
        expect(ping.body.delivery).toMatchObject({ outcome: 'rejected', status: 500 })
      } finally {
        receiver.behave = () => ({ status: 204 })
      }
    })

    test('DELETE stops the webhook: 200 with it deleted, gone from the list, and a second DELETE is 404', async () => {
      const { body: made } = await subscribe({ url: receiver.url, events: ['listing.updated'] })
      const deleted = await call('DELETE', `/webhooks/${made.webhook.id}`)
      expect(deleted.status).toBe(200)
      expect(deleted.body.webhook).toMatchObject({ id: made.webhook.id, status: 'deleted', delivery: null })
      expect((await call('GET', '/webhooks')).body.webhooks.map((w: Json) => w.id)).not.toContain(made.webhook.id)
      expect(await call('DELETE', `/webhooks/${made.webhook.id}`)).toMatchObject({ status: 404, body: { ok: false, error: 'not_found' } })
    })

    test('another owner\'s webhook is not found, whatever is asked of it', async () => {
      const { body: made } = await subscribe({ url: receiver.url, events: ['listing.listed'] })
      const id = made.webhook.id
      for (const [method, path] of [['DELETE', `/webhooks/${id}`], ['GET', `/webhooks/${id}/deliveries`], ['POST', `/webhooks/${id}/ping`]] as const) {
        expect(await call(method, path, undefined, other)).toMatchObject({ status: 404, body: { ok: false, error: 'not_found', message: `no webhook ${id}` } })
      }
      expect((await call('GET', '/webhooks', undefined, other)).body).toMatchObject({ count: 0, webhooks: [] })
      expect((await call('GET', '/webhooks')).body.webhooks.find((w: Json) => w.id === id).status).toBe('active')
    })

    test('a read-only key lists but cannot subscribe, delete or ping (403 scope_denied)', async () => {
      expect((await call('GET', '/webhooks', undefined, readOnly)).status).toBe(200)
      expect(await subscribe({ url: receiver.url, events: ['listing.listed'] }, readOnly)).toMatchObject({ status: 403, body: { ok: false, error: 'scope_denied' } })
      expect(await call('DELETE', '/webhooks/whk_0000000000000000', undefined, readOnly)).toMatchObject({ status: 403, body: { error: 'scope_denied' } })
      expect(await call('POST', '/webhooks/whk_0000000000000000/ping', undefined, readOnly)).toMatchObject({ status: 403, body: { error: 'scope_denied' } })
    })

    /** The body schema POST /webhooks documents, as a client's validator reads it. */
    const documented = async () => {
      const document = (await (await system.request('/api/v1/openapi.json')).json()) as Json
      const schema = resolveRefs(document.paths['/api/v1/webhooks'].post.requestBody.content['application/json'].schema, document)
      return (body: unknown) => schemaValidator().validate(schema as object, body) as boolean
    }

    test('the document agrees: the rule between fields its schema states, the server applies; what the server accepts, the schema accepts', async () => {
      const valid = await documented()
      for (const body of RULE_REFUSALS) expect(valid(body), JSON.stringify(body)).toBe(false)
      for (const body of ACCEPTED) {
        expect(valid(body), JSON.stringify(body)).toBe(true)
        const made = await subscribe(body)
        expect(made.status, JSON.stringify(made.body)).toBe(201)
        await call('DELETE', `/webhooks/${made.body.webhook.id}`)
      }
    })

    test.each([
      ['no url', { events: ['listing.listed'] }, ['url']],
      ['no events', { url: 'https://hooks.example.com/a', events: [] }, ['events']],
      ['an unknown event type', { url: 'https://hooks.example.com/a', events: ['listing.sold'] }, ['events.0']],
      ['an unknown field', { url: 'https://hooks.example.com/a', events: ['listing.listed'], secret: 'mine' }, ['secret']],
      ['a bad country', { url: 'https://hooks.example.com/a', events: ['listing.listed'], country: 'XX' }, ['country']],
      ['a zone without its country', { url: 'https://hooks.example.com/a', events: ['listing.listed'], zone: 'Zona 3' }, ['zone']],
      ['a zone alert without a country', { url: 'https://hooks.example.com/a', events: ['zone.statistics_changed'], threshold_pct: 5 }, ['country']],
      ['a zone alert without a threshold', { url: 'https://hooks.example.com/a', events: ['zone.statistics_changed'], country: 'GT' }, ['threshold_pct']],
      ['a threshold without zone alerts', { url: 'https://hooks.example.com/a', events: ['listing.listed'], threshold_pct: 5 }, ['threshold_pct']],
      ['a threshold with 3 decimals', { url: 'https://hooks.example.com/a', events: ['zone.statistics_changed'], country: 'GT', threshold_pct: 1.125 }, null],
      ['a threshold of 0', { url: 'https://hooks.example.com/a', events: ['zone.statistics_changed'], country: 'GT', threshold_pct: 0 }, null],
      ['a URL that is not one', { url: 'not a url', events: ['listing.listed'] }, ['url']],
      ['a URL over 2,048 characters', { url: `https://hooks.example.com/${'a'.repeat(2048)}`, events: ['listing.listed'] }, ['url']],
    ])('%s is refused: 400 invalid_request naming the field', async (_, body, fields) => {
      const { status, body: answer } = await subscribe(body)
      expect(status).toBe(400)
      expect(answer).toMatchObject({ ok: false, error: 'invalid_request' })
      expect(typeof answer.message).toBe('string')
      if (fields) expect((answer.details as { field: string }[]).map((d) => d.field)).toEqual(fields)
    })

    test('a body that is not JSON, or too large, is refused before anything is recorded', async () => {
      const notJson = await system.request('/api/v1/webhooks', { method: 'POST', key, body: '{', headers: { 'content-type': 'application/json' } })
      expect(notJson.status).toBe(400)
      const large = await system.request('/api/v1/webhooks', { method: 'POST', key, body: JSON.stringify({ url: 'x'.repeat(20_000) }), headers: { 'content-type': 'application/json' } })
      expect(large.status).toBe(413)
      expect(((await large.json()) as Json).error).toBe('payload_too_large')
    })

    test(`an owner may have ${MAX_SUBSCRIPTIONS_PER_OWNER} webhooks: the next is 409 conflict, and deleting one makes room`, async () => {
      const { key: limited } = await system.ownerWithKey('limited', 'enterprise')
      const made: string[] = []
      for (let i = 0; i < MAX_SUBSCRIPTIONS_PER_OWNER; i++) made.push((await subscribe({ url: `https://hooks.example.com/${i}`, events: ['listing.listed'] }, limited)).body.webhook.id)
      const refused = await subscribe({ url: 'https://hooks.example.com/one-more', events: ['listing.listed'] }, limited)
      expect(refused).toMatchObject({ status: 409, body: { ok: false, error: 'conflict' } })
      expect(refused.body.message).toContain(String(MAX_SUBSCRIPTIONS_PER_OWNER))
      await call('DELETE', `/webhooks/${made[0]}`, undefined, limited)
      expect((await subscribe({ url: 'https://hooks.example.com/one-more', events: ['listing.listed'] }, limited)).status).toBe(201)
    })

    test('concurrent subscriptions never pass the limit', async () => {
      const { key: racing } = await system.ownerWithKey('racing', 'enterprise')
      const answers = await Promise.all(Array.from({ length: MAX_SUBSCRIPTIONS_PER_OWNER + 5 }, (_, i) => subscribe({ url: `https://hooks.example.com/${i}`, events: ['listing.listed'] }, racing)))
      const statuses = answers.map((a) => a.status)
      expect(statuses.every((s) => s === 201 || s === 409)).toBe(true)
      expect((await call('GET', '/webhooks', undefined, racing)).body.count).toBeLessThanOrEqual(MAX_SUBSCRIPTIONS_PER_OWNER)
      expect((await call('GET', '/webhooks', undefined, racing)).body.count).toBe(statuses.filter((s) => s === 201).length)
    })

    test('an admin key sees the delivery backlog in /health; another key does not', async () => {
      const { key: admin } = await system.ownerWithKey('root', 'admin')
      await eventually('the backlog is measured', async () => ((await call('GET', '/health', undefined, admin)).body.webhooks ?? null) !== null)
      expect((await call('GET', '/health', undefined, admin)).body.webhooks).toEqual({ waiting_subscriptions: expect.any(Number), oldest_failing_since: null })
      expect((await call('GET', '/health')).body).not.toHaveProperty('webhooks')
    })

    test('a webhook id that is not one is 400 naming it; an unknown one 404', async () => {
      expect(await call('GET', '/webhooks/nope/deliveries')).toMatchObject({ status: 400, body: { error: 'invalid_request', details: [{ field: 'id' }] } })
      expect(await call('GET', '/webhooks/whk_0000000000000000/deliveries')).toMatchObject({ status: 404, body: { error: 'not_found' } })
      expect(await call('GET', '/webhooks/whk_0000000000000000/deliveries?limit=0')).toMatchObject({ status: 400, body: { details: [{ field: 'limit' }] } })
    })
  })
}
