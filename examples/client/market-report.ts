/**
 * A typed Mirador client in a few lines: `openapi-fetch` over the types that `openapi-typescript`
 * generates from docs/openapi.json (`npm run openapi` regenerates mirador-api.d.ts).
 *
 *   MIRADOR_URL=http://localhost:8080 MIRADOR_KEY=mrd_… bun examples/client/market-report.ts CR
 *
 * Prints the country's zones by median price per m², how the cheapest zone's median moved over the
 * last 12 months, its cheapest verified sale listing, what a property like it is worth by the
 * estimate, and an investor briefing for the cheapest zone, one JSON line each.
 */
import createClient from 'openapi-fetch'
import type { paths } from './mirador-api'

const baseUrl = process.env.MIRADOR_URL ?? 'http://localhost:8080'
const key = process.env.MIRADOR_KEY
if (!key) throw new Error('set MIRADOR_KEY to an API key (npm run -s cli -- key issue …)')
const country = (process.argv[2] ?? 'GT') as 'GT' | 'SV' | 'HN' | 'CR' | 'BZ' | 'DO' | 'PA' | 'BR'

const mirador = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${key}` } })

const zones = await mirador.GET('/api/v1/zones', { params: { query: { country } } })
if (zones.error) throw new Error(`${zones.error.error}: ${zones.error.message}`)
const priced = zones.data.zones.filter((zone) => zone.median_ppm2_usd !== null)
priced.sort((a, b) => (a.median_ppm2_usd ?? 0) - (b.median_ppm2_usd ?? 0))
console.log(JSON.stringify({ country, zones: zones.data.count, cheapest_per_m2: priced[0]?.zone, dearest_per_m2: priced.at(-1)?.zone }))

const cheapest = priced[0]?.slug ?? 'zona-1'
const history = await mirador.GET('/api/v1/zone/{slug}/history', { params: { path: { slug: cheapest }, query: { country, months: '12' } } })
if (history.error) throw new Error(`${history.error.error}: ${history.error.message}`)
const months = history.data.history.filter((month) => month.listed)
console.log(JSON.stringify({ zone: history.data.zone, months: months.length, median_ppm2_usd: months.map((m) => [m.month, m.median_ppm2_usd]) }))

const listings = await mirador.GET('/api/v1/listings', {
  params: { query: { country, operation: 'Venta', sort: 'price_asc', limit: '1' } },
})
if (listings.error) throw new Error(`${listings.error.error}: ${listings.error.message}`)
const [first] = listings.data.listings
console.log(JSON.stringify({ sales: listings.data.total, cheapest_sale: first && { id: first.id, zone: first.zone, price_usd: first.price_usd } }))

if (first) {
  const query = { country, zone: first.zone, operation: 'Venta' as const, property_type: first.property_type, area_m2: String(first.area_m2) }
  const estimate = await mirador.GET('/api/v1/estimate', { params: { query } })
  if (estimate.error) throw new Error(`${estimate.error.error}: ${estimate.error.message}`)
  const { estimate: figures, reason, comparables, method } = estimate.data
  console.log(JSON.stringify({ like: first.id, price_usd: figures?.price_usd ?? null, range: figures && [figures.low_usd, figures.high_usd], reason, comparables: comparables.map((c) => c.listing_id), level: method.level }))
}
const zone = priced[0]?.zone ?? 'Zona 1'
const briefing = await mirador.POST('/api/v1/briefings/investor', {
  body: { zone, profile: 'balanced', country, language: 'en' },
})
if (briefing.error) throw new Error(`${briefing.error.error}: ${briefing.error.message}`)
console.log(JSON.stringify({ zone, verdict: briefing.data.verdict, confidence: briefing.data.confidence, quota_used: briefing.data.usage.used }))
