import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { demoMarketSystem, type TestSystem } from '../support/app.ts'

/**
 * HTTP conventions of the paths outside the operations (issue 28, item 13): the probes and the
 * docs answer HEAD like GET without a body, and a path written with a trailing slash is no path
 * (404 in the JSON envelope, after the key checks under /api/v1).
 */
describe('HEAD and trailing slashes', () => {
  let system: TestSystem
  let key: string

  beforeAll(async () => {
    ;({ system, key } = await demoMarketSystem('pro'))
  })
  afterAll(() => system?.close())

  test.each(['/livez', '/readyz', '/docs', '/', '/api/v1/openapi.json', '/docs/start.js'])('HEAD %s → 200 with the headers of its GET and no body, without a key', async (path) => {
    const get = await system.request(path)
    const head = await system.request(path, { method: 'HEAD' })
    expect(head.status).toBe(200)
    expect(await head.text()).toBe('')
    expect(head.headers.get('content-type')).toBe(get.headers.get('content-type'))
    expect(head.headers.get('content-length')).toBe(String(new TextEncoder().encode(await get.text()).length))
    expect(head.headers.get('x-request-id')).toBeTruthy()
  })

  test('a public path names HEAD among its methods: another method gets 405 with Allow: GET, HEAD', async () => {
    for (const path of ['/livez', '/readyz', '/docs']) {
      const response = await system.request(path, { method: 'DELETE' })
      expect(response.status, path).toBe(405)
      expect(response.headers.get('allow'), path).toBe('GET, HEAD')
      expect(await response.json(), path).toMatchObject({ ok: false, error: 'method_not_allowed' })
    }
  })

  test('an operation still refuses HEAD: 405 with Allow: GET, after the key checks', async () => {
    const response = await system.request('/api/v1/zones', { method: 'HEAD', key })
    expect(response.status).toBe(405)
    expect(response.headers.get('allow')).toBe('GET')
    expect((await system.request('/api/v1/zones', { method: 'HEAD' })).status).toBe(401)
  })

  test.each(['/api/v1/zones/', '/api/v1/zone/zona-3/', '/api/v1/zone/zona-3/history/', '/api/v1/listings/?zone=zona-3', '/api/v1/health/'])(
    'GET %s (a trailing slash) → 404 not_found in the JSON envelope, 401 without a key',
    async (path) => {
      const response = await system.request(path, { key })
      expect(response.status).toBe(404)
      expect(response.headers.get('content-type')).toMatch(/^application\/json/)
      expect(await response.json()).toMatchObject({ ok: false, error: 'not_found', message: expect.stringContaining(path.split('?')[0]!) })
      expect((await system.request(path)).status).toBe(401)
      // The path as documented answers.
      expect((await system.request(path.replace(/\/(\?|$)/, '$1'), { key })).status).toBe(200)
    },
  )

  test.each(['/livez/', '/readyz/', '/docs/', '/api/v1/openapi.json/'])('GET %s (a trailing slash) → 404 not_found in the JSON envelope', async (path) => {
    const response = await system.request(path, path.startsWith('/api/') ? { key } : {})
    expect(response.status).toBe(404)
    expect(await response.json()).toMatchObject({ ok: false, error: 'not_found' })
    expect((await system.request(path.slice(0, -1))).status).toBe(200)
  })
})
