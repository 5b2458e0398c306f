import { describe, expect, it } from 'vitest'
import { DEMO_DEFAULTS, generateDemoFeed, HISTORY_DAYS, MIN_DEMO_LISTINGS } from '../../src/domain/demo/market.ts'
import { type FeedRecord, parseFeedLine } from '../../src/domain/listings/feed.ts'
import { DEFAULT_FX } from '../../src/domain/market/fx.ts'
import { COUNTRIES, COUNTRY_CURRENCIES, PROPERTY_TYPES } from '../../src/domain/market/vocabulary.ts'
import { ANCHOR } from '../support/market.ts'

const DAY = 86_400_000
const feed = generateDemoFeed({ seed: DEMO_DEFAULTS.seed, listings: DEMO_DEFAULTS.listings, anchor: ANCHOR })
const byListing = new Map<string, FeedRecord[]>()
for (const r of feed) byListing.set(`${r.source}\n${r.source_id}`, [...(byListing.get(`${r.source}\n${r.source_id}`) ?? []), r])
const latest = [...byListing.values()].map((lines) => lines[lines.length - 1]!)

describe('demo market', () => {
  it('is the same for the same seed and anchor, and different for another seed', () => {
    expect(generateDemoFeed({ seed: DEMO_DEFAULTS.seed, listings: DEMO_DEFAULTS.listings, anchor: ANCHOR })).toEqual(feed)
    const other = generateDemoFeed({ seed: 'other', listings: DEMO_DEFAULTS.listings, anchor: ANCHOR })
    expect(other).not.toEqual(feed)
  })

  it('has the requested number of listings, each line a valid feed line', () => {
    expect(byListing.size).toBe(DEMO_DEFAULTS.listings)
    for (const [i, record] of feed.entries()) {
      const parsed = parseFeedLine(JSON.stringify(record), i + 1, ANCHOR)
      expect(parsed).toEqual({ ok: true, record })
    }
  })

  it('covers all eight countries with at least 12 zones each, numbered without gaps', () => {
    for (const country of COUNTRIES) {
      const zones = new Set(feed.filter((r) => r.country === country).map((r) => Number(r.zone.slice(5))))
      expect(zones.size, country).toBeGreaterThanOrEqual(12)
      expect([...zones].sort((a, b) => a - b), country).toEqual(Array.from({ length: zones.size }, (_, i) => i + 1))
    }
  })

  it('has sale and rent, all six property types and 0 to 5 bedrooms', () => {
    expect(new Set(latest.map((r) => r.operation))).toEqual(new Set(['Venta', 'Renta']))
    expect(new Set(latest.map((r) => r.property_type))).toEqual(new Set(PROPERTY_TYPES))
    expect(new Set(latest.map((r) => r.bedrooms))).toEqual(new Set([0, 1, 2, 3, 4, 5]))
  })

  it('prices plausibly: local currency or USD, sales per m² in a city range, rents far below sales', () => {
    const usdPerM2 = (r: FeedRecord) => r.price / DEFAULT_FX[r.currency] / r.area_m2
    for (const r of latest) expect(COUNTRY_CURRENCIES[r.country]).toContain(r.currency)
    const homes = latest.filter((r) => r.property_type === 'Apartamento' || r.property_type === 'Casa')
    const sales = homes.filter((r) => r.operation === 'Venta').map(usdPerM2).sort((a, b) => a - b)
    const rents = homes.filter((r) => r.operation === 'Renta').map(usdPerM2).sort((a, b) => a - b)
    const median = (xs: number[]) => xs[Math.floor(xs.length / 2)]!
    expect(median(sales)).toBeGreaterThan(500)
    expect(median(sales)).toBeLessThan(4000)
    expect(median(rents)).toBeGreaterThan(median(sales) / 400)
    expect(median(rents)).toBeLessThan(median(sales) / 100)
    for (const country of COUNTRIES) {
      expect(latest.some((r) => r.country === country && r.currency !== 'USD') || country === 'SV', country).toBe(true)
    }
  })

  it('is about a fifth scraped, and some broker listings are never verified', () => {
    const scraped = latest.filter((r) => r.source === 'scraped').length / latest.length
    expect(scraped).toBeGreaterThan(0.15)
    expect(scraped).toBeLessThan(0.25)
    const brokers = latest.filter((r) => r.source === 'broker')
    const unverified = brokers.filter((r) => r.verified_at === null).length / brokers.length
    expect(unverified).toBeGreaterThan(0.05)
    expect(unverified).toBeLessThan(0.4)
    expect(latest.filter((r) => r.source === 'broker').every((r) => r.broker !== null)).toBe(true)
  })

  it('has about 180 days of history ending at the anchor: listings appear, get verified, change price, get delisted', () => {
    const times = feed.map((r) => Date.parse(r.observed_at))
    expect(Math.max(...times)).toBeLessThanOrEqual(ANCHOR.getTime())
    expect(Math.max(...times)).toBeGreaterThan(ANCHOR.getTime() - DAY)
    expect(Math.min(...times)).toBeGreaterThanOrEqual(ANCHOR.getTime() - HISTORY_DAYS * DAY)
    expect(Math.min(...times)).toBeLessThan(ANCHOR.getTime() - (HISTORY_DAYS - 2) * DAY)
    expect(feed.map((r) => r.observed_at)).toEqual([...feed.map((r) => r.observed_at)].sort())
    const histories = [...byListing.values()]
    const share = (test: (lines: FeedRecord[]) => boolean) => histories.filter(test).length / histories.length
    expect(share((lines) => lines[0]!.verified_at === null && lines.some((l) => l.verified_at !== null))).toBeGreaterThan(0.3)
    expect(share((lines) => new Set(lines.map((l) => l.price)).size > 1)).toBeGreaterThan(0.2)
    expect(share((lines) => lines[lines.length - 1]!.status === 'delisted')).toBeGreaterThan(0.15)
    expect(share((lines) => lines.some((l, i) => i > 0 && l.status === 'active' && lines[i - 1]!.status === 'delisted'))).toBeGreaterThan(0)
    // Each line of a listing tells something new, in time order.
    for (const lines of histories) {
      for (let i = 1; i < lines.length; i++) {
        expect(lines[i]!.observed_at > lines[i - 1]!.observed_at).toBe(true)
        expect({ ...lines[i], observed_at: '' }).not.toEqual({ ...lines[i - 1], observed_at: '' })
      }
    }
  })

  it('refuses a market too small to cover every zone', () => {
    expect(() => generateDemoFeed({ seed: 's', listings: MIN_DEMO_LISTINGS - 1, anchor: ANCHOR })).toThrow(/at least/)
    expect(generateDemoFeed({ seed: 's', listings: MIN_DEMO_LISTINGS, anchor: ANCHOR }).length).toBeGreaterThanOrEqual(MIN_DEMO_LISTINGS)
  })
})
