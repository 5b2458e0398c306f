import { type AnyElysia, Elysia } from 'elysia'
import { afterAll, beforeAll, expect } from 'vitest'
import { listingsProjection } from '../../projections/listings/projection.ts'
import { ProjectionRunner } from '../../projections/engine/runner.ts'
import { generateDemoFeed } from '../../src/domain/demo/market.ts'
import type { Db } from '../../src/db/port.ts'
import type { EventStore } from '../../src/eventstore/port.ts'
import type { Gate } from '../../src/http/gate.ts'
import { openSqlEventStore } from '../../src/eventstore/sql-event-store.ts'
import { errorPlugin } from '../../src/http/errors.ts'
import type { Logger } from '../../src/runtime/log.ts'
import type { FeedLine, FeedRecord } from '../../src/domain/listings/feed.ts'
import { ingestRecords } from '../../src/listings/ingest.ts'
import { type ListingFeed, listingFeedOn } from '../../src/listings/feed-deps.ts'
import { ListingInventory } from '../../projections/listings/inventory.ts'
import { DEFAULT_FX } from '../../src/domain/market/fx.ts'
import type { Clock } from '../../src/shared/random.ts'
import { ReadyZones } from '../../projections/listings/ready-zones.ts'
import type { DatabaseTarget } from './databases.ts'
import { adminGate } from './gate.ts'

/** A valid broker feed line; override any field. */
export const aLine = (overrides: Partial<Record<keyof FeedLine, unknown>> = {}): Record<string, unknown> => ({
  source: 'broker',
  source_id: 'brk-1',
  country: 'GT',
  zone: 'Zona 10',
  operation: 'Venta',
  property_type: 'Apartamento',
  price: 1_550_000,
  currency: 'GTQ',
  area_m2: 100,
  bedrooms: 2,
  bathrooms: 2,
  title: 'Apartamento en venta, Zona 10',
  broker: { id: 'gt-brk-01', name: 'Inmobiliaria Los Altos' },
  url: 'https://gt-brk-01.example/propiedades/brk-1',
  listed_at: '2026-03-01T10:00:00Z',
  verified_at: null,
  status: 'active',
  observed_at: '2026-03-01T12:00:00Z',
  ...overrides,
})

/** A valid record, as parseFeedLine would return it for `aLine(overrides)` (times already UTC ISO). */
export const aRecord = (overrides: Partial<FeedRecord> = {}): FeedRecord =>
  ({
    ...aLine(),
    listed_at: '2026-03-01T10:00:00.000Z',
    observed_at: '2026-03-01T12:00:00.000Z',
    ...overrides,
  }) as FeedRecord

export const ANCHOR = new Date('2026-05-01T00:00:00.000Z')

export type Market = {
  db: Db
  store: EventStore
  runner: ProjectionRunner
  records: FeedRecord[]
  /** The prepared zone answers, following the runner. */
  zones: ReadyZones
  /** GET /listings from memory, following `runner`. */
  inventory: ListingInventory
  /** Projects what is pending and waits until the answers served from memory include it. */
  settle(): Promise<void>
  close(): Promise<void>
}

/**
 * A database holding the demo market of `listings` listings (its feed lines passed through `shape`),
 * projected, with its listing inventory.
 */
export async function openMarket(
  target: DatabaseTarget,
  listings: number,
  seed = 'test',
  shape: (records: FeedRecord[]) => FeedRecord[] = (records) => records,
): Promise<Market> {
  const db = await target.open()
  const store = await openSqlEventStore(db)
  const runner = new ProjectionRunner(db, store, [listingsProjection])
  const records = shape(generateDemoFeed({ seed, listings, anchor: ANCHOR }))
  await ingestRecords(store, records, DEFAULT_FX)
  await runner.catchUp()
  const zones = ReadyZones.follow(db, runner, (error) => {
    throw error
  })
  // Past instants are answered from the history in memory once a first question has loaded it (SQL
  // until then): loaded here, so that the tests of as_of and the monthly history read the memory path.
  await zones.firstEvent()
  await zones.settled()
  const inventory = await ListingInventory.open(db, runner)
  return {
    db,
    store,
    runner,
    records,
    zones,
    inventory,
    async settle() {
      await runner.catchUp()
      await zones.settled()
      await inventory.settled()
    },
    async close() {
      zones.stop()
      inventory.stop()
      await runner.stop()
      await store.close()
      await db.close()
    },
  }
}

export type Get = (path: string) => Promise<{ status: number; body: Record<string, unknown> }>

const silent: Logger = { info() {}, error() {} }
const dayAfterAnchor: Clock = () => new Date(ANCHOR.getTime() + 86_400_000)

/**
 * A route plugin over `market`, mounted as the app mounts it (under /api/v1, behind the real gate
 * and error mapping, called with an admin key) on the day after the market's history.
 * Authentication itself is tested in test/http and test/security. `get` checks that every answer is JSON.
 */
export function mountedOn(market: Market, routes: Routes): Get {
  const fetch = mountedFetch(market, routes)
  return async (path) => {
    const response = await fetch(path)
    expect(response.headers.get('content-type')).toMatch(/application\/json/)
    return { status: response.status, body: (await response.json()) as Record<string, unknown> }
  }
}

type Routes = (deps: { gate: Gate; db: Db; zones: ReadyZones; inventory: ListingInventory; feed: ListingFeed; clock: Clock }) => AnyElysia

/** The same mounting as `mountedOn`, answering the whole Response (for answers that are not one JSON document). */
export function mountedFetch(market: Market, routes: Routes, feed = listingFeedOn(market)): (path: string, headers?: Record<string, string>) => Promise<Response> {
  const { gate, authorization } = adminGate()
  const app = new Elysia()
    .use(errorPlugin(silent))
    .group('/api/v1', (api) =>
      api.use(routes({ gate, db: market.db, zones: market.zones, inventory: market.inventory, feed, clock: dayAfterAnchor })),
    )
  return (path, headers = {}) => app.handle(new Request(`http://localhost/api/v1${path}`, { headers: { authorization, ...headers } }))
}

/**
 * For the enclosing describe block: a generated market of 150 listings on `target`, with `routes`
 * mounted on it (mountedOn); `market` and `get` are ready in its tests, the market closed after them.
 */
export function routesOnMarket(target: DatabaseTarget, routes: Routes): { market: Market; get: Get } {
  const env = {} as { market: Market; get: Get }
  beforeAll(async () => {
    env.market = await openMarket(target, 150, 'routes')
    env.get = mountedOn(env.market, routes)
  })
  afterAll(async () => env.market?.close())
  return env
}

/** The 400 body naming exactly `fields`, in that order. */
export const invalidRequest = (fields: string[]) => ({
  ok: false,
  error: 'invalid_request',
  message: expect.any(String),
  details: fields.map((field) => ({ field, message: expect.any(String) })),
})
