import { liveTables } from '../../projections/engine/live-tables.ts'
import { listingsProjection } from '../../projections/listings/projection.ts'
import { countryZoneFacts, type ListingsGeneration } from '../../projections/listings/zone-rows.ts'
import { zoneDetailAt, zonesAt } from '../../src/domain/market/zone-statistics.ts'
import type { Db } from '../../src/db/port.ts'
import type { Country } from '../../src/domain/market/vocabulary.ts'
import type { ZoneDetail, ZoneSummary } from '../../src/domain/market/zone-figures.ts'

/**
 * The zone answers computed from the read model's tables at once, without the in-memory preparation
 * the API serves them from (projections/listings/ready-zones.ts): what those must equal.
 */

const generationOf = (db: Db, given?: ListingsGeneration) => (given ? Promise.resolve(given) : liveTables(db).of(listingsProjection))

/** GET /zones computed in SQL now, from the live generation or a given one . */
export async function listZones(db: Db, country: Country, now: Date, given?: ListingsGeneration): Promise<ZoneSummary[]> {
  const { tables } = await generationOf(db, given)
  return zonesAt(await countryZoneFacts(db, tables, country), now)
}

/** GET /zone/{slug} computed in SQL now, from the live generation or a given one. */
export async function getZoneDetail(
  db: Db,
  country: Country,
  slug: string,
  now: Date,
  given?: ListingsGeneration,
): Promise<ZoneDetail | null> {
  const { tables } = await generationOf(db, given)
  return zoneDetailAt(await countryZoneFacts(db, tables, country), slug, now)
}
