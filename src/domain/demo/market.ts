import type { Broker, FeedRecord } from '../listings/feed.ts'
import { DEFAULT_FX, type FxTable } from '../market/fx.ts'
import { COUNTRIES, type Country, type Currency, type Operation, type PropertyType, type Source } from '../market/vocabulary.ts'
import { zoneName } from '../market/zone-name.ts'
import { type Prng, seededPrng } from './prng.ts'

/**
 * The deterministic demo market: feed lines for all eight countries, as a broker export and a
 * scraper would have produced them over the 180 days up to `anchor`. The same options give the
 * same lines, hence the same events. Everything is invented: names, prices and URLs
 * (`.example` domains).
 */
export type DemoOptions = { seed: string; listings: number; anchor: Date }

export const DEMO_DEFAULTS = { seed: 'mirador', listings: 2000 } as const
export const HISTORY_DAYS = 180

/** The demo's end of history for a run at `now`: the start of that UTC day (stable all day long). */
export const demoAnchor = (now: Date) => new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()))

export type CountryMarket = {
  zones: number
  /** Share of the listings of the demo. */
  weight: number
  currency: Currency
  /** Share of listings priced in US dollars rather than the local currency. */
  usdShare: number
  /** Typical asking price per m² of an apartment for sale, in USD. */
  ppm2: number
  city: string
  language: 'es' | 'pt' | 'en'
}

/** The demo's shape per country; the 1M-listing benchmark loads the same shape. */
export const MARKETS: Record<Country, CountryMarket> = {
  GT: { zones: 16, weight: 0.2, currency: 'GTQ', usdShare: 0.25, ppm2: 1500, city: 'Ciudad de Guatemala', language: 'es' },
  SV: { zones: 12, weight: 0.1, currency: 'USD', usdShare: 1, ppm2: 1250, city: 'San Salvador', language: 'es' },
  HN: { zones: 12, weight: 0.09, currency: 'HNL', usdShare: 0.2, ppm2: 950, city: 'Tegucigalpa', language: 'es' },
  CR: { zones: 14, weight: 0.12, currency: 'CRC', usdShare: 0.35, ppm2: 1700, city: 'San José', language: 'es' },
  BZ: { zones: 12, weight: 0.06, currency: 'BZD', usdShare: 0.3, ppm2: 1300, city: 'Belize City', language: 'en' },
  DO: { zones: 13, weight: 0.12, currency: 'DOP', usdShare: 0.3, ppm2: 1450, city: 'Santo Domingo', language: 'es' },
  PA: { zones: 15, weight: 0.13, currency: 'PAB', usdShare: 0.85, ppm2: 2100, city: 'Ciudad de Panamá', language: 'es' },
  BR: { zones: 18, weight: 0.18, currency: 'BRL', usdShare: 0.05, ppm2: 2300, city: 'São Paulo', language: 'pt' },
}

/** Smallest market the generator accepts: one listing for every zone, so zones have no gaps. */
export const MIN_DEMO_LISTINGS = COUNTRIES.reduce((n, c) => n + MARKETS[c].zones, 0)

export type Kind = { weight: number; ppm2Factor: number; area: [number, number]; saleShare: number }
export const KINDS: Record<PropertyType, Kind> = {
  Apartamento: { weight: 0.38, ppm2Factor: 1, area: [40, 200], saleShare: 0.6 },
  Casa: { weight: 0.27, ppm2Factor: 0.85, area: [80, 450], saleShare: 0.7 },
  Terreno: { weight: 0.1, ppm2Factor: 0.22, area: [150, 3000], saleShare: 0.92 },
  Oficina: { weight: 0.09, ppm2Factor: 1.05, area: [30, 400], saleShare: 0.5 },
  Local: { weight: 0.09, ppm2Factor: 1.15, area: [25, 300], saleShare: 0.5 },
  Bodega: { weight: 0.07, ppm2Factor: 0.45, area: [150, 2500], saleShare: 0.45 },
}
const KIND_NAMES = Object.keys(KINDS) as PropertyType[]

export const BROKER_NAMES = [
  'Inmobiliaria Los Altos',
  'Casa Propia Realty',
  'Grupo Hábitat',
  'Vista Real Bienes Raíces',
  'Nexo Inmobiliario',
  'Punto Hogar',
]
const PORTALS = ['clasificados', 'encuentra24', 'vivienda-hoy']

const MINUTE = 60_000
const DAY = 1440 * MINUTE

/** Rounds to three significant digits, as asking prices usually are. */
function askingPrice(value: number): number {
  const magnitude = 10 ** Math.max(0, Math.floor(Math.log10(value)) - 2)
  return Math.max(1, Math.round(value / magnitude)) * magnitude
}

function bedroomsOf(kind: PropertyType, prng: Prng): number {
  if (kind === 'Apartamento') return prng.weighted([[0, 6], [1, 24], [2, 38], [3, 26], [4, 6]])
  if (kind === 'Casa') return prng.weighted([[1, 2], [2, 18], [3, 40], [4, 28], [5, 12]])
  return 0
}

function bathroomsOf(kind: PropertyType, bedrooms: number, prng: Prng): number {
  if (kind === 'Terreno') return 0
  if (kind === 'Apartamento' || kind === 'Casa') return Math.max(1, bedrooms - prng.int(0, 1)) + (prng.chance(0.3) ? 0.5 : 0)
  return prng.int(1, 2)
}

function titleOf(m: CountryMarket, kind: PropertyType, operation: Operation, zone: string, bedrooms: number): string {
  const rooms = bedrooms > 0 ? { es: ` · ${bedrooms} hab.`, pt: ` · ${bedrooms} quartos`, en: ` · ${bedrooms} bed` }[m.language] : ''
  const verb = {
    es: operation === 'Venta' ? 'en venta' : 'en renta',
    pt: operation === 'Venta' ? 'à venda' : 'para alugar',
    en: operation === 'Venta' ? 'for sale' : 'for rent',
  }[m.language]
  return `${kind} ${verb}, ${zone}, ${m.city}${rooms}`
}

type Change =
  | { at: number; kind: 'seen' | 'verified' | 'delisted' | 'relisted' }
  | { at: number; kind: 'price'; factor: number }

/** A zone of the demo with its price level and yearly trend. */
type Place = { country: Country; zone: number; level: number; trend: number }

/** The zones, each country's, and each country's brokers of the demo. */
type Places = { zones: Place[]; zonesOf: Map<Country, Place[]>; brokers: Map<Country, Broker[]> }

/** Zone price levels and yearly trends, drawn first so that they do not depend on the size. */
function drawPlaces(prng: Prng): Places {
  const zones = COUNTRIES.flatMap((country) =>
    Array.from({ length: MARKETS[country].zones }, (_, i) => ({
      country,
      zone: i + 1,
      level: prng.between(0.55, 1.85),
      trend: prng.between(-0.08, 0.16),
    })),
  )
  const zonesOf = new Map(COUNTRIES.map((c) => [c, zones.filter((z) => z.country === c)]))
  const brokers = new Map<Country, Broker[]>(
    COUNTRIES.map((c) => [
      c,
      BROKER_NAMES.map((name, i) => ({ id: `${c.toLowerCase()}-brk-${String(i + 1).padStart(2, '0')}`, name })),
    ]),
  )
  return { zones, zonesOf, brokers }
}

/** The demo's time span, in epoch milliseconds: its end (`anchor` to the minute) and the start of its history. */
type Span = { end: number; historyStart: number }

/** What stays the same across a listing's lines, and the changes that make them. */
type DrawnListing = Omit<FeedRecord, 'price' | 'verified_at' | 'status' | 'observed_at'> & {
  price: number
  verifiedAt: number | null
  changes: Change[]
}

/** The `n`th listing of the demo, drawn from `prng` (the draws in this order keep the demo the same). */
function drawListing(n: number, prng: Prng, places: Places, span: Span, fx: FxTable): DrawnListing {
  const { end, historyStart } = span
  // The first listings visit every zone once and every property type, so nothing is missing.
  const place =
    n < places.zones.length
      ? places.zones[n]!
      : prng.pick(places.zonesOf.get(prng.weighted(COUNTRIES.map((c) => [c, MARKETS[c].weight] as const)))!)
  const market = MARKETS[place.country]
  const kind = n < KIND_NAMES.length ? KIND_NAMES[n]! : prng.weighted(KIND_NAMES.map((k) => [k, KINDS[k].weight] as const))
  const spec = KINDS[kind]
  const operation: Operation = prng.chance(spec.saleShare) ? 'Venta' : 'Renta'
  const source: Source = prng.chance(0.2) ? 'scraped' : 'broker'
  const bedrooms = bedroomsOf(kind, prng)
  const bathrooms = bathroomsOf(kind, bedrooms, prng)
  const area = Math.round(spec.area[0] * (spec.area[1] / spec.area[0]) ** prng.next())
  const currency: Currency = prng.chance(market.usdShare) ? 'USD' : market.currency

  const listedAt = end - Math.floor(prng.between(0.2, 300) * 1440) * MINUTE
  const firstSeen = Math.min(end, Math.max(listedAt, historyStart) + prng.int(0, 720) * MINUTE)
  const yearsBeforeEnd = (end - listedAt) / (365 * DAY)
  const saleUsd =
    market.ppm2 * place.level * spec.ppm2Factor * area * Math.exp(0.16 * prng.normal()) * (1 - place.trend * yearsBeforeEnd)
  const usd = operation === 'Venta' ? saleUsd : saleUsd * prng.between(0.0045, 0.0075)
  const price = askingPrice(usd * fx[currency])

  const broker = source === 'broker' ? prng.pick(places.brokers.get(place.country)!) : null
  const verifiedAt =
    source === 'broker' && prng.chance(0.85) ? listedAt + Math.floor(prng.between(0.2, 14) * 1440) * MINUTE : null
  const changes = drawChanges(prng, firstSeen, verifiedAt, end)

  const sourceId =
    source === 'broker'
      ? `${broker!.id}-${String(n + 1).padStart(6, '0')}`
      : `${prng.pick(PORTALS)}:${place.country.toLowerCase()}/${(n + 1) * 7919}`
  const url =
    source === 'broker'
      ? `https://${broker!.id}.example/propiedades/${sourceId}`
      : `https://${sourceId.split(':')[0]}.example/anuncio/${(n + 1) * 7919}`
  const zone = zoneName(place.zone)
  return {
    source,
    source_id: sourceId,
    country: place.country,
    zone,
    operation,
    property_type: kind,
    price,
    currency,
    area_m2: area,
    bedrooms,
    bathrooms,
    title: titleOf(market, kind, operation, zone, bedrooms),
    broker,
    url,
    listed_at: new Date(listedAt).toISOString(),
    verifiedAt,
    changes,
  }
}

/** What happens to a listing seen first at `firstSeen`: verification, price changes, delisting and relisting. */
function drawChanges(prng: Prng, firstSeen: number, verifiedAt: number | null, end: number): Change[] {
  const changes: Change[] = [{ at: firstSeen, kind: 'seen' }]
  if (verifiedAt !== null && verifiedAt <= end) changes.push({ at: Math.max(verifiedAt, firstSeen), kind: 'verified' })
  const priceChanges = prng.weighted([[0, 60], [1, 28], [2, 12]])
  for (let i = 0; i < priceChanges; i++) {
    const factor = prng.chance(0.7) ? prng.between(0.88, 0.98) : prng.between(1.02, 1.08)
    changes.push({ at: firstSeen + Math.floor(prng.between(3, 120) * 1440) * MINUTE, kind: 'price', factor })
  }
  if (prng.chance(0.35)) {
    const delistedAt = firstSeen + Math.floor(prng.between(5, 200) * 1440) * MINUTE
    changes.push({ at: delistedAt, kind: 'delisted' })
    if (prng.chance(0.08)) changes.push({ at: delistedAt + Math.floor(prng.between(5, 40) * 1440) * MINUTE, kind: 'relisted' })
  }
  return changes
}

/** A listing's feed lines: a line carries the whole state at its time; one is written at every change up to `end`. */
function linesOf(listing: DrawnListing, end: number): FeedRecord[] {
  const { changes, verifiedAt, ...fixed } = listing
  const lines: FeedRecord[] = []
  let price = listing.price
  let status: 'active' | 'delisted' = 'active'
  let lastAt = Number.NaN
  for (const change of changes.filter((c) => c.at <= end).sort((a, b) => a.at - b.at)) {
    if (change.kind === 'price') {
      if (status === 'delisted') continue
      const next = askingPrice(price * change.factor)
      if (next === price) continue
      price = next
    }
    if (change.kind === 'delisted') status = 'delisted'
    if (change.kind === 'relisted') status = 'active'
    // Changes within the same minute make one line, with the later state.
    if (change.at === lastAt) lines.pop()
    lastAt = change.at
    lines.push({
      ...fixed,
      price,
      verified_at: verifiedAt !== null && verifiedAt <= change.at ? new Date(verifiedAt).toISOString() : null,
      status,
      observed_at: new Date(change.at).toISOString(),
    })
  }
  return lines
}

export function generateDemoFeed(options: DemoOptions, fx: FxTable = DEFAULT_FX): FeedRecord[] {
  const { seed, listings, anchor } = options
  if (!Number.isInteger(listings) || listings < MIN_DEMO_LISTINGS) {
    throw new Error(`the demo market needs at least ${MIN_DEMO_LISTINGS} listings (one per zone), got ${listings}`)
  }
  const prng = seededPrng(`mirador-demo:${seed}`)
  const end = Math.floor(anchor.getTime() / MINUTE) * MINUTE
  const span = { end, historyStart: end - HISTORY_DAYS * DAY }
  const places = drawPlaces(prng)
  const records: FeedRecord[] = []
  for (let n = 0; n < listings; n++) records.push(...linesOf(drawListing(n, prng, places, span, fx), end))
  return records.sort((a, b) => (a.observed_at < b.observed_at ? -1 : a.observed_at > b.observed_at ? 1 : 0))
}
