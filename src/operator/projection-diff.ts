import { diffRows, liveAndHeld, type ProjectionDiff } from '../../projections/engine/diff.ts'
import type { Projection } from '../../projections/engine/projection.ts'
import { diffListings, type ListingsDiff } from '../../projections/listings/diff.ts'
import { listingsProjection } from '../../projections/listings/projection.ts'
import type { ListingsGeneration } from '../../projections/listings/zone-rows.ts'
import type { Db } from '../db/port.ts'

/** A comparison as the CLI prints it: the listings details are there for `listings` only. */
export type AnyProjectionDiff = ProjectionDiff & Partial<Omit<ListingsDiff, keyof ProjectionDiff>>

/**
 * `projections diff NAME`: the held generation against the live one, compared as the API would
 * answer. For `listings`: every zone's figures and the public listings; for the other read models:
 * the rows that differ.
 */
export async function diffProjection(
  db: Db,
  projection: Projection,
  now: Date,
  progress: (done: number, total: number) => void = () => {},
): Promise<AnyProjectionDiff> {
  const { live, held } = await liveAndHeld(db, projection)
  if (projection.name === listingsProjection.name) {
    return diffListings(db, live as ListingsGeneration, held as ListingsGeneration, now, progress)
  }
  return diffRows(db, projection.name, live, held)
}
