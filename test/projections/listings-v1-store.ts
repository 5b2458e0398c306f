import { EXACT_PPM2, type ListingsTables, listingsProjection } from '../../projections/listings/projection.ts'
import type { Db } from '../../src/db/port.ts'
import type { EventStore } from '../../src/eventstore/port.ts'

/**
 * A store as version 1 of the listings projection left it, before generations existed: tables
 * `listings_v1`, `listing_history_v1`, `listing_zones_v1` whose price per m² is rounded to the cent
 * per listing, and the checkpoint in `mirador_checkpoints` under `listings_v1`. Its rows are the
 * current projection's statements applied to the current DDL with version 1's two column
 * definitions: the columns and table later versions added (history's type, bedrooms, source and
 * listing time; touches) are there too, and nothing that reads version 1 reads them.
 */
export const V1_TABLES: ListingsTables = {
  listings: 'listings_v1',
  history: 'listing_history_v1',
  zones: 'listing_zones_v1',
  touches: 'listing_zone_touches_v1',
  changes: 'listing_changes_v1',
}

function v1Schema(): string[] {
  const current = listingsProjection.schema(V1_TABLES)
  const v1 = current.map((ddl) =>
    ddl
      .replace(`ppm2_usd numeric generated always as (${EXACT_PPM2}) stored`, 'ppm2_usd numeric(16, 2) generated always as (round(price_usd / area_m2::numeric, 2)) stored')
      .replace('ppm2_usd numeric not null', 'ppm2_usd numeric(16, 2) not null'),
  )
  const changed = v1.filter((ddl, i) => ddl !== current[i]).length
  if (changed !== 2) throw new Error('the listings DDL changed: update the version 1 fixture')
  return [...v1, ...listingsProjection.indexes(V1_TABLES)]
}

/** Projects the store's listing events into version 1 tables, as version 1 code did. */
export async function buildListingsV1(db: Db, store: EventStore): Promise<number> {
  for (const ddl of v1Schema()) await db.query(ddl)
  await db.query(`create table if not exists mirador_checkpoints (
    projection text primary key, position bigint not null, updated_at timestamptz not null default clock_timestamp())`)
  let position = 0
  for (;;) {
    const events = await store.readAll(position, { limit: 1000, categories: listingsProjection.categories })
    if (events.length === 0) break
    position = events[events.length - 1]!.position
    await db.transaction(async (tx) => {
      for (const change of listingsProjection.applyBatch!(events, V1_TABLES)) await tx.query(change.text, change.params)
      await tx.query(
        `insert into mirador_checkpoints (projection, position) values ('listings_v1', $1)
         on conflict (projection) do update set position = excluded.position`,
        [position],
      )
    })
  }
  return position
}
