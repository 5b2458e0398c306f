import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { openPglite } from '../../src/db/pglite.ts'
import { formatApiKey } from '../../src/domain/keys/api-key.ts'
import { type PrometheusMetrics, prometheusMetrics } from '../../src/metrics/prometheus.ts'
import { type TestSystem, startTestSystem } from '../support/app.ts'

/**
 * Bounded cardinality: whatever path, method or key a client sends, the metrics' label values come
 * from the route table, a fixed list of methods, the statuses and error codes the API answers with.
 * Every request is counted once, and nothing a client chose appears in the exposition.
 */

const OWNER = 'labelled-owner-x4'
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'other']

/** The label sets of the series of `metric` in the exposition text. */
function labelSets(text: string, metric: string): Record<string, string>[] {
  return text
    .split('\n')
    .filter((line) => line.startsWith(`${metric}{`))
    .map((line) => Object.fromEntries([...line.slice(metric.length + 1, line.lastIndexOf('}')).matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1]!, m[2]!])))
}
const total = (text: string, metric: string) =>
  text
    .split('\n')
    .filter((line) => line.startsWith(`${metric}{`) || line.startsWith(`${metric} `))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0)

describe('metric labels under random requests', () => {
  let system: TestSystem
  let metrics: PrometheusMetrics
  let keys: Record<'none' | 'client' | 'admin' | 'malformed' | 'unknown', string | undefined>

  beforeAll(async () => {
    metrics = prometheusMetrics({ version: 'test', runtime: 'node' })
    system = await startTestSystem(await openPglite(), { metrics, limits: { pro: 50, enterprise: 50 } })
    const client = await system.ownerWithKey(OWNER, 'pro')
    const admin = await system.ownerWithKey('labelled-admin-y5', 'admin')
    keys = { none: undefined, client: client.key, admin: admin.key, malformed: 'mrd_nope', unknown: formatApiKey('UnknownKey000000000000000000Zz00') }
  })
  afterAll(() => system?.close())

  test('600 random paths, methods and keys: routes are templates or `unmatched`, every request counted once, no path, key or owner in the text', async () => {
    const routes = new Set(system.app.routes.map((route) => route.path))
    const sent: string[] = []
    let count = 0
    // Each request carries a token of its own, which must never come back in the metrics.
    const token = () => `tk${(count++).toString(36)}q`
    const segment = fc.stringMatching(/^[A-Za-z0-9._~!$&'()*+,;=:@%-]{0,10}$/)
    const path = fc.oneof(
      fc.webPath().map((p) => `/${token()}${p}`),
      fc.constantFrom('/api/v1/zone/', '/api/v1/', '/api/v1/briefings/', '/', '/api/v1/listings/', '/docs/').chain((base) =>
        fc.tuple(segment, fc.constantFrom('', '?country=gt', '/x', '?q=1')).map(([s, after]) => `${base}${token()}${s}${after}`),
      ),
    )
    const method = fc.constantFrom('GET', 'GET', 'POST', 'HEAD', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'PROPFIND', 'BREW')
    const key = fc.constantFrom(...(Object.keys(keys) as (keyof typeof keys)[]))
    await fc.assert(
      fc.asyncProperty(method, path, key, async (verb, target, which) => {
        sent.push(target)
        const response = await system.request(target, { method: verb, key: keys[which] })
        await response.arrayBuffer()
        expect(response.status).toBeLessThan(500)
      }),
      { numRuns: 600 },
    )
    // After-response hooks run on the event loop's next turns.
    await new Promise((resolve) => setTimeout(resolve, 100))
    const { body: text } = await metrics.scrape()

    const requestLabels = labelSets(text, 'mirador_http_requests_total')
    for (const labels of requestLabels) {
      expect(routes.has(labels.route!) || labels.route === 'unmatched', labels.route).toBe(true)
      expect(METHODS).toContain(labels.method)
      expect(labels.status).toMatch(/^[1-5]\d\d$/)
    }
    // Requests did reach routes: the templates are there, the paths are not.
    for (const template of ['/api/v1/zone/:slug', '/api/v1/*', 'unmatched']) expect(requestLabels.map((l) => l.route)).toContain(template)
    for (const labels of labelSets(text, 'mirador_http_refusals_total')) expect(labels.code).toMatch(/^[a-z_]+$/)
    expect(total(text, 'mirador_http_requests_total')).toBe(600)
    expect(total(text, 'mirador_http_request_duration_seconds_count')).toBe(600)
    // A bound that depends on the route table, not on the requests: routes × methods × statuses seen.
    expect(requestLabels.length).toBeLessThan(routes.size * METHODS.length)
    for (let i = 0; i < count; i++) expect(text).not.toContain(`tk${i.toString(36)}q`)
    for (const secret of [...Object.values(keys).filter((k): k is string => k !== undefined), OWNER, 'labelled-admin-y5']) expect(text).not.toContain(secret)
  })
})
