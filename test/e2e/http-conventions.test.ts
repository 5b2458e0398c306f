import { writeFileSync } from 'node:fs'
import { request } from 'node:http'
import { join } from 'node:path'
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import { afterAll, describe, expect, test } from 'vitest'
import { aLine } from '../support/market.ts'
import { initialisedDataDir, type RunningServer, type Runtime, startServer } from '../support/server.ts'

type Answer = { status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }

/** A GET through node:http, which decompresses nothing: the bytes as the server sent them. */
function get(server: RunningServer, path: string, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const sent = request(`${server.url}${path}`, { headers }, (response) => {
      const chunks: Buffer[] = []
      response.on('data', (chunk: Buffer) => chunks.push(chunk))
      response.on('end', () => resolve({ status: response.statusCode!, headers: response.headers, body: Buffer.concat(chunks) }))
      response.on('error', reject)
    })
    sent.on('error', reject)
    sent.end()
  })
}

const decoded = (answer: Answer): Buffer => {
  const coding = answer.headers['content-encoding']
  if (coding === 'br') return brotliDecompressSync(answer.body)
  if (coding === 'gzip') return gunzipSync(answer.body)
  if (coding === undefined) return answer.body
  throw new Error(`unexpected content-encoding ${String(coding)}`)
}

/** A key issued through the CLI, once the API knows it. */
async function keyOf(server: RunningServer, owner: string, tier: string, actor = owner): Promise<string> {
  const created = await server.cli('owner', 'create', '--id', owner, '--tier', tier)
  const issued = await server.cli('key', 'issue', '--owner', owner, '--scopes', 'read', '--actor', actor, '--json')
  expect(issued.code, `${created.stderr}${issued.stderr}`).toBe(0)
  const key = (JSON.parse(issued.stdout) as { key: string }).key
  for (let i = 0; i < 200 && (await get(server, '/api/v1/health', { authorization: `Bearer ${key}` })).status !== 200; i++) await new Promise((r) => setTimeout(r, 50))
  return key
}

/** The checks every runtime passes: compression negotiated, small answers untouched, conditional GET. */
async function negotiatesAndValidates(server: RunningServer, key: string) {
  const auth = { authorization: `Bearer ${key}` }
  const zones = '/api/v1/zones?country=GT'
  const identity = await get(server, zones, auth)
  expect(identity.status).toBe(200)
  expect(identity.body.length).toBeGreaterThan(1024)
  expect(identity.headers['content-encoding']).toBeUndefined()
  expect(identity.headers.vary).toBe('Accept-Encoding')
  for (const coding of ['gzip', 'br']) {
    const coded = await get(server, zones, { ...auth, 'accept-encoding': coding })
    expect(coded.headers['content-encoding']).toBe(coding)
    expect(coded.headers.vary).toBe('Accept-Encoding')
    expect(coded.body.length).toBeLessThan(identity.body.length / 3)
    expect(decoded(coded).equals(identity.body)).toBe(true)
  }
  // A small answer goes as it is, whatever the client accepts.
  const small = await get(server, '/api/v1/health', { ...auth, 'accept-encoding': 'gzip, br' })
  const health = await get(server, '/', { 'accept-encoding': 'gzip, br' })
  for (const answer of [small, health]) {
    expect(answer.status).toBe(200)
    expect(answer.body.length).toBeLessThan(1024)
    expect(answer.headers['content-encoding']).toBeUndefined()
    expect(answer.headers.vary).toBeUndefined()
    expect(JSON.parse(answer.body.toString())).toMatchObject({})
  }
  // Conditional GET: the same ETag twice, then 304 with no body.
  const again = await get(server, zones, auth)
  expect(again.headers.etag).toMatch(/^"[A-Za-z0-9_-]{22}"$/)
  expect(again.headers.etag).toBe(identity.headers.etag)
  const notModified = await get(server, zones, { ...auth, 'if-none-match': String(identity.headers.etag), 'x-request-id': 'conditional-1' })
  expect(notModified.status).toBe(304)
  expect(notModified.body.length).toBe(0)
  expect(notModified.headers).toMatchObject({ 'x-request-id': 'conditional-1', etag: identity.headers.etag, vary: 'Accept-Encoding' })
  expect(notModified.headers['x-ratelimit-remaining']).toBeDefined()
  expect(notModified.headers.ratelimit).toBeDefined()
  return { identity }
}

describe('HTTP conventions on the real server (Bun): compression, ETags, the rate-limit headers of the IETF draft', () => {
  const dataDir = initialisedDataDir()
  let server: RunningServer
  let key = ''
  afterAll(() => server?.stop())

  test('/zones in br and gzip decompresses to exactly the identity body; small answers untouched; 304 on a matching ETag', async () => {
    server = await startServer({ DATA_DIR: dataDir, DEMO_SEED: 'on', DEMO_LISTINGS: '400', RATE_LIMIT_PRO: '4' })
    key = await keyOf(server, 'acme', 'enterprise')
    const { identity } = await negotiatesAndValidates(server, key)
    const sizes = Object.fromEntries(
      await Promise.all(['identity', 'gzip', 'br'].map(async (coding) => [coding, (await get(server, '/api/v1/zones?country=GT', { authorization: `Bearer ${key}`, 'accept-encoding': coding })).body.length])),
    )
    console.log('GET /api/v1/zones?country=GT bytes:', JSON.stringify(sizes), 'identity', identity.body.length)
  })

  test('Accept-Encoding is read with its weights, identity and *', async () => {
    const chosen = async (accept: string) => (await get(server, '/api/v1/zones?country=GT', { authorization: `Bearer ${key}`, 'accept-encoding': accept })).headers['content-encoding'] ?? 'identity'
    expect(await chosen('gzip, deflate, br')).toBe('br')
    expect(await chosen('gzip;q=1.0, br;q=0.5')).toBe('gzip')
    expect(await chosen('br;q=0, gzip')).toBe('gzip')
    expect(await chosen('BR;Q=0.8, GZIP;q=0.9')).toBe('gzip')
    expect(await chosen('*')).toBe('br')
    expect(await chosen('*;q=0.5, br;q=0')).toBe('gzip')
    expect(await chosen('identity')).toBe('identity')
    expect(await chosen('identity, gzip;q=0.5')).toBe('identity')
    expect(await chosen('gzip;q=0, br;q=0')).toBe('identity')
    expect(await chosen('deflate, compress')).toBe('identity')
    expect(await chosen('gzip;q=2')).toBe('identity')
  })

  test('the ETag changes when the data changes (an ingest), and the old one then gets 200', async () => {
    const auth = { authorization: `Bearer ${key}` }
    const before = await get(server, '/api/v1/zones?country=GT', auth)
    const file = join(dataDir, 'one-more.ndjson')
    writeFileSync(file, `${JSON.stringify(aLine({ source_id: 'etag-1', zone: 'Zona 5', observed_at: '2026-11-20T12:00:00Z', listed_at: '2026-11-20T10:00:00Z' }))}\n`)
    expect((await server.cli('ingest', file)).code).toBe(0)
    let after = before
    for (let i = 0; i < 100 && after.headers.etag === before.headers.etag; i++) {
      await new Promise((r) => setTimeout(r, 100))
      after = await get(server, '/api/v1/zones?country=GT', auth)
    }
    expect(after.headers.etag).not.toBe(before.headers.etag)
    expect(after.body.equals(before.body)).toBe(false)
    const stale = await get(server, '/api/v1/zones?country=GT', { ...auth, 'if-none-match': `W/${String(before.headers.etag)}` })
    expect(stale.status).toBe(200)
    const current = await get(server, '/api/v1/zones?country=GT', { ...auth, 'if-none-match': `"nope", W/${String(after.headers.etag)}` })
    expect(current.status).toBe(304)
  })

  test('RateLimit and RateLimit-Policy say what X-RateLimit-* say; a 304 is counted; the 429 carries them too', async () => {
    expect((await server.cli('owner', 'create', '--id', 'root', '--tier', 'admin')).code).toBe(0)
    const pro = await keyOf(server, 'small', 'pro', 'root')
    // keyOf's /health spent 1 of the 4 requests an hour.
    const first = await get(server, '/api/v1/zones?country=GT', { authorization: `Bearer ${pro}` })
    const h = first.headers
    expect(h['ratelimit-policy']).toBe(`"hour";q=${h['x-ratelimit-limit']};w=3600`)
    const [, remaining, seconds] = /^"hour";r=(\d+);t=(\d+)$/.exec(String(h.ratelimit))!
    expect(remaining).toBe(h['x-ratelimit-remaining'])
    expect(Math.abs(Number(h['x-ratelimit-reset']) - Date.now() / 1000 - Number(seconds))).toBeLessThan(5)
    const conditional = await get(server, '/api/v1/zones?country=GT', { authorization: `Bearer ${pro}`, 'if-none-match': String(h.etag) })
    expect(conditional.status).toBe(304)
    expect(Number(conditional.headers['x-ratelimit-remaining'])).toBe(Number(remaining) - 1)
    expect(conditional.headers.ratelimit).toMatch(new RegExp(`^"hour";r=${Number(remaining) - 1};t=\\d+$`))
    await get(server, '/api/v1/zones?country=GT', { authorization: `Bearer ${pro}` })
    const refused = await get(server, '/api/v1/zones?country=GT', { authorization: `Bearer ${pro}` })
    expect(refused.status).toBe(429)
    expect(refused.headers['ratelimit-policy']).toBe('"hour";q=4;w=3600')
    expect(refused.headers.ratelimit).toBe(`"hour";r=0;t=${refused.headers['retry-after']}`)
  })

  test('the docs bundle is served compressed, with an ETag and 304', async () => {
    const path = '/docs/swagger-ui-bundle.js'
    const identity = await get(server, path)
    const sizes: Record<string, number> = { identity: identity.body.length }
    for (const coding of ['gzip', 'br']) {
      const coded = await get(server, path, { 'accept-encoding': coding })
      expect(coded.headers['content-encoding']).toBe(coding)
      expect(decoded(coded).equals(identity.body)).toBe(true)
      sizes[coding] = coded.body.length
      const again = await get(server, path, { 'accept-encoding': coding, 'if-none-match': String(coded.headers.etag) })
      expect(again.status).toBe(304)
      expect(again.body.length).toBe(0)
    }
    console.log(`GET ${path} bytes:`, JSON.stringify(sizes))
    expect(sizes.br).toBeLessThan(sizes.identity! / 3)
  })
})

describe.each(['node', 'deno'] as Runtime[])('compression and conditional GET on %s', (runtime) => {
  const dataDir = initialisedDataDir()
  let server: RunningServer
  afterAll(() => server?.stop())

  test(`${runtime}: gzip and br decompress to the identity body, small answers untouched, 304`, { timeout: 180_000 }, async () => {
    server = await startServer({ DATA_DIR: dataDir, DEMO_SEED: 'on', DEMO_LISTINGS: '400' }, { runtime, timeoutMs: 150_000 })
    await negotiatesAndValidates(server, await keyOf(server, 'acme', 'enterprise'))
  })
})
