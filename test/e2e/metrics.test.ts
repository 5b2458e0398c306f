import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { type FakeOpenAi, answer, startFakeOpenAi } from '../support/fake-openai.ts'
import { freePort, initialisedDataDir, type RunningServer, startServer } from '../support/server.ts'

/**
 * Prometheus metrics on the real server (`bun src/main.ts`, METRICS_PORT): a scripted session of
 * requests, then the counters it must have moved, exactly (the difference between a scrape before
 * and one after), and no key, key id, owner id or raw path anywhere in the exposition.
 */

type Json = Record<string, any>
const OWNER = 'metered-owner-q7'
const ADMIN = 'metered-admin-k2'

/** `name{labels} value` lines of the exposition text, by series (name and labels as printed). */
function series(text: string): Map<string, number> {
  const values = new Map<string, number>()
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue
    const at = line.lastIndexOf(' ')
    values.set(line.slice(0, at), Number(line.slice(at + 1)))
  }
  return values
}

describe('metrics on their own port, after a scripted session', () => {
  let server: RunningServer
  let fake: FakeOpenAi
  let metricsUrl = ''
  let key = ''
  let keyId = ''
  let adminKey = ''

  const scrape = async () => {
    const response = await fetch(metricsUrl)
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/)
    return response.text()
  }
  const call = async (path: string, init: RequestInit & { key?: string } = {}) => {
    const headers = new Headers(init.headers)
    if (init.key) headers.set('authorization', `Bearer ${init.key}`)
    const response = await fetch(`${server.url}${path}`, { ...init, headers })
    return { status: response.status, body: (await response.json()) as Json }
  }
  const brief = (body: unknown) =>
    call('/api/v1/briefings/investor', { key, method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })

  beforeAll(async () => {
    fake = await startFakeOpenAi()
    const metricsPort = await freePort()
    server = await startServer({
      DATA_DIR: initialisedDataDir('mirador-metrics-'),
      DEMO_SEED: 'on',
      DEMO_LISTINGS: '200',
      METRICS_PORT: String(metricsPort),
      RATE_LIMIT_PRO: '7',
      QUOTA_PRO: '1',
      OPENAI_API_KEY: 'sk-test',
      OPENAI_BASE_URL: fake.baseUrl,
    })
    metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`
    const cli = async (...args: string[]) => {
      const result = await server.cli(...args, '--json')
      expect(result.code, result.stderr).toBe(0)
      return JSON.parse(result.stdout) as Json
    }
    await cli('owner', 'create', '--id', ADMIN, '--tier', 'admin')
    await cli('owner', 'create', '--id', OWNER, '--tier', 'pro')
    const issued = await cli('key', 'issue', '--owner', OWNER, '--scopes', 'read,write', '--actor', ADMIN)
    ;({ key, key_id: keyId } = issued as { key: string; key_id: string })
    adminKey = (await cli('key', 'issue', '--owner', ADMIN, '--scopes', 'read', '--actor', ADMIN)).key
  })
  afterAll(async () => {
    await server?.stop()
    await fake?.close()
  })

  test('exact counts of requests by route template, method and status, refusals, briefings and writer failures', async () => {
    const before = series(await scrape())
    const slug = (await call('/api/v1/zones?country=GT', { key })).body.zones[0].slug as string // 1 of 7
    expect((await call(`/api/v1/zone/${slug}`, { key })).status).toBe(200) // 2
    const zone = { zone: (await call(`/api/v1/zone/${slug}`, { key })).body.zone as string, profile: 'balanced', language: 'en' } // 3

    const maybe = answer({ verdict: 'MAYBE', confidence: 'high', headline: 'x', body_md: 'x' })
    fake.script(maybe, maybe)
    const failed = await brief({ ...zone, profile: 'conservative' }) // 4: the writer fails twice, nothing charged
    expect([failed.status, failed.body.error]).toEqual([502, 'upstream_error'])
    fake.script(answer({ verdict: 'BUY', confidence: 'high', headline: 'Cheap', body_md: '## Cheap' }))
    expect((await brief(zone)).status).toBe(200) // 5: generated, the month's one briefing
    expect((await brief(zone)).body.cached).toBe(true) // 6: cache hit
    const refused = await brief({ ...zone, profile: 'aggressive' }) // 7: the quota is spent
    expect([refused.status, refused.body.error]).toEqual([429, 'quota_exceeded'])
    expect((await call('/api/v1/zones', { key })).body.error).toBe('rate_limit') // the 8th request of the hour
    expect((await call('/api/v1/health')).status).toBe(401)
    const secret = `nowhere-${Math.random().toString(36).slice(2)}`
    expect((await call(`/api/v1/${secret}/deeper`, { key: adminKey })).status).toBe(404)
    expect((await call(`/${secret}`)).status).toBe(404)
    expect((await call('/metrics')).status).toBe(404) // the API does not serve them

    const text = await scrape()
    const after = series(text)
    const moved = (name: string) => (after.get(name) ?? 0) - (before.get(name) ?? 0)
    const requests = (route: string, method: string, status: number) => moved(`mirador_http_requests_total{route="${route}",method="${method}",status="${status}"}`)
    expect({
      zones: requests('/api/v1/zones', 'GET', 200),
      zonesLimited: requests('/api/v1/zones', 'GET', 429),
      zone: requests('/api/v1/zone/:slug', 'GET', 200),
      briefed: requests('/api/v1/briefings/investor', 'POST', 200),
      writerFailed: requests('/api/v1/briefings/investor', 'POST', 502),
      overQuota: requests('/api/v1/briefings/investor', 'POST', 429),
      anonymous: requests('/api/v1/health', 'GET', 401),
      noEndpoint: requests('/api/v1/*', 'GET', 404),
      outside: requests('unmatched', 'GET', 404),
    }).toEqual({ zones: 1, zonesLimited: 1, zone: 2, briefed: 2, writerFailed: 1, overQuota: 1, anonymous: 1, noEndpoint: 1, outside: 2 })
    expect(moved('mirador_http_request_duration_seconds_count{route="/api/v1/briefings/investor",method="POST"}')).toBe(4)
    expect(
      ['rate_limit', 'quota_exceeded', 'upstream_error', 'auth_required', 'not_found'].map((code) => moved(`mirador_http_refusals_total{code="${code}"}`)),
    ).toEqual([1, 1, 1, 1, 3])
    expect(['generated', 'cache_hit', 'replayed'].map((outcome) => moved(`mirador_briefings_total{outcome="${outcome}"}`))).toEqual([1, 1, 0])
    expect(moved('mirador_briefing_writer_failures_total')).toBe(1)
    // Generated and cache hit: one append each at least (the quota charge, the hit's record).
    expect(moved('mirador_event_store_append_duration_seconds_count{operation="append"}') + moved('mirador_event_store_append_duration_seconds_count{operation="appendMany"}')).toBeGreaterThanOrEqual(2)

    // Projections: position, head and lag of every live generation; the process's own metrics.
    for (const projection of ['owners', 'api_keys', 'listings', 'briefing_cache', 'briefing_usage']) {
      expect(text).toMatch(new RegExp(`^mirador_projection_position\\{projection="${projection}",generation="v\\d+\\.\\d+",state="live"\\} \\d+$`, 'm'))
      expect(text).toMatch(new RegExp(`^mirador_projection_head\\{projection="${projection}",`, 'm'))
      expect(text).toMatch(new RegExp(`^mirador_projection_lag_events\\{projection="${projection}",`, 'm'))
    }
    for (const name of ['process_cpu_seconds_total', 'process_resident_memory_bytes', 'mirador_event_loop_lag_seconds', 'mirador_heap_used_bytes']) {
      expect(text).toMatch(new RegExp(`^${name} `, 'm'))
    }
    // What the process is, and no Node-only names on Bun (nodejs_version_info would say Bun's Node-compat version).
    const { version } = JSON.parse(readFileSync(join(import.meta.dirname, '../../package.json'), 'utf8')) as { version: string }
    expect(text.match(/^mirador_build_info\{.*$/gm)).toEqual([`mirador_build_info{version="${version}",runtime="bun"} 1`])
    expect(text).not.toMatch(/^(# TYPE )?nodejs_/m)

    // Bounded labels: no key, key id, owner id or path a client sent.
    for (const secretText of [key, adminKey, keyId, OWNER, ADMIN, secret, slug]) expect(text).not.toContain(secretText)
  })

  test('changes served and exports by format: counts, listings and bytes', async () => {
    const before = series(await scrape())
    // Identity: the bytes counted are the bytes sent, and fetch would otherwise ask for gzip.
    const get = (path: string) => fetch(`${server.url}/api/v1${path}`, { headers: { authorization: `Bearer ${adminKey}`, 'accept-encoding': 'identity' } })
    const changes = (await (await get('/listings/changes?limit=7')).json()) as Json
    expect(changes.changes).toHaveLength(7)
    const ndjson = await (await get('/listings/export?country=GT')).arrayBuffer()
    const parquet = await (await get('/listings/export?format=parquet')).arrayBuffer()
    const listings = (((await (await get('/listings?country=GT&limit=1')).json()) as Json).total as number) + 0
    const allText = await (await get('/listings/export')).text()
    const all = allText.trimEnd().split('\n').length - 1

    const after = series(await scrape())
    const moved = (name: string) => (after.get(name) ?? 0) - (before.get(name) ?? 0)
    expect(moved('mirador_listing_changes_served_total')).toBe(7)
    // An export cut short is counted as `cut`: test/listings/export-metrics.test.ts (this market fits in one chunk).
    expect(['ndjson', 'parquet', 'csv'].map((format) => [moved(`mirador_listing_exports_total{format="${format}",outcome="completed"}`), moved(`mirador_listing_exports_total{format="${format}",outcome="cut"}`)])).toEqual([
      [2, 0],
      [1, 0],
      [0, 0],
    ])
    expect(moved('mirador_listing_export_listings_total{format="ndjson"}')).toBe(listings + all)
    expect(moved('mirador_listing_export_listings_total{format="parquet"}')).toBe(all)
    expect(moved('mirador_listing_export_bytes_total{format="parquet"}')).toBe(parquet.byteLength)
    expect(moved('mirador_listing_export_bytes_total{format="ndjson"}')).toBe(ndjson.byteLength + Buffer.byteLength(allText))
    expect(moved('mirador_listing_export_duration_seconds_count{format="ndjson"}')).toBe(2)
  })

  test('the metrics port serves GET /metrics only, with no key and no limit', async () => {
    const base = metricsUrl.replace(/\/metrics$/, '')
    expect((await fetch(`${base}/api/v1/health`)).status).toBe(404)
    expect((await fetch(metricsUrl, { method: 'POST' })).status).toBe(404)
    const statuses = await Promise.all(Array.from({ length: 20 }, async () => (await fetch(metricsUrl)).status))
    expect(new Set(statuses)).toEqual(new Set([200]))
  })
})
