import type { EventStore } from '../eventstore/port.ts'
import { type IngestCounts, ingestRecords } from '../listings/ingest.ts'
import { LISTING_CATEGORY } from '../domain/listings/listing.ts'
import { DEFAULT_FX, type FxTable } from '../domain/market/fx.ts'
import { type DemoOptions, generateDemoFeed } from '../domain/demo/market.ts'

export type SeedSummary = IngestCounts & { read: number; listings: number }
/** Feed lines ingested so far, of all the lines of the demo. */
export type SeedProgress = (done: number, total: number) => void

/**
 * `demo seed`: generates the demo market and ingests it like any feed. Seeding twice with the same
 * options records nothing the second time (the lines are identical).
 */
export async function seedDemo(
  store: EventStore,
  options: DemoOptions,
  progress?: SeedProgress,
  fx: FxTable = DEFAULT_FX,
): Promise<SeedSummary> {
  const records = generateDemoFeed(options, fx)
  progress?.(0, records.length)
  const counts = await ingestRecords(store, records, fx, { onProgress: progress })
  return { read: records.length, listings: options.listings, ...counts }
}

/**
 * Whether the store holds no market data at all (no listing event), whatever else it holds: owners
 * and keys created before the first start must not keep the demo market away.
 */
export async function lacksMarketData(store: EventStore): Promise<boolean> {
  return (await store.readAll(0, { categories: [LISTING_CATEGORY], limit: 1 })).length === 0
}
