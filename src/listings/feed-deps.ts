import type { EventStore } from '../eventstore/port.ts'
import type { Db } from '../db/port.ts'
import { type Metrics, noMetrics } from '../metrics/port.ts'
import { ChangeFeed } from '../../projections/listings/change-feed.ts'
import { cursorAhead, decodeCursor, encodeCursor, storeIdentity } from './cursor.ts'

/** What the change feed and the export read: the changes table, the event store (its identity and head) and where they report. */
export type ListingFeed = {
  changes: ChangeFeed
  store: Pick<EventStore, 'readAll' | 'headPosition'>
  metrics: Metrics
  /** Listings an export reads at a time (one Parquet row group each). */
  exportChunk: number
  /** A full garbage collection, which an export asks for as it goes (decision 0121); nothing where the runtime has none. */
  collectGarbage(): void
}

/** 2,000 listings: about 1 MB of NDJSON a chunk, a few database round trips a second at most. */
export const EXPORT_CHUNK = 2000
export type ListingFeedDeps = { feed: ListingFeed }

/** The cursor text of `position` in this store. */
export const cursorOf = async (feed: ListingFeed, position: number) => encodeCursor(await storeIdentity(feed.store), position)

/** The position a client's cursor names, checked: this store's, and not ahead of its log (invalid_cursor otherwise). */
export async function positionOf(feed: ListingFeed, cursor: string | undefined, served: number): Promise<number> {
  if (cursor === undefined) return 0
  const position = decodeCursor(cursor, await storeIdentity(feed.store))
  // Ahead of the read model is normal for a moment after a write; ahead of the log never is.
  if (position > served && position > (await feed.store.headPosition())) throw cursorAhead()
  return position
}

/** The feed of the read models on `db`, with the identity and head of `store`. */
export const listingFeedOn = (
  storage: { db: Db; store: EventStore },
  metrics: Metrics = noMetrics,
  { exportChunk = EXPORT_CHUNK, collectGarbage = () => {} }: Partial<Pick<ListingFeed, 'exportChunk' | 'collectGarbage'>> = {},
): ListingFeed => ({
  changes: new ChangeFeed(storage.db),
  store: storage.store,
  metrics,
  exportChunk,
  collectGarbage,
})
