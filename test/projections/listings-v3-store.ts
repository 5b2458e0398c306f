import { generationTables } from '../../projections/engine/generations.ts'
import type { Projection } from '../../projections/engine/projection.ts'
import { ProjectionRunner } from '../../projections/engine/runner.ts'
import { listingsProjection, type ListingsTables } from '../../projections/listings/projection.ts'
import type { Db } from '../../src/db/port.ts'
import type { EventStore, RecordedEvent } from '../../src/eventstore/port.ts'

/**
 * A store as version 3 of the listings projection left it: generation v3.1, live, whose history has
 * neither area, bathrooms nor public_from, and whose intervals a change of bathrooms alone does not
 * cut. Written by the current statements over the events with `bathrooms` taken out of each
 * ListingDetailsChanged's `changed` (which only says whether the interval is cut), then the three
 * columns version 4 added dropped: version 3's tables column for column.
 */
const withoutBathrooms = (events: readonly RecordedEvent[]): RecordedEvent[] =>
  events.map((event) =>
    event.type === 'ListingDetailsChanged'
      ? { ...event, data: { ...event.data, changed: (event.data.changed as string[]).filter((field) => field !== 'bathrooms') } }
      : event,
  )

const listingsV3: Projection<keyof ListingsTables> = {
  ...listingsProjection,
  version: 3,
  apply: (event, t) => listingsProjection.applyBatch!(withoutBathrooms([event]), t),
  applyBatch: (events, t) => listingsProjection.applyBatch!(withoutBathrooms(events), t),
}

/** Projects the store's listing events into generation v3.1 (live) as version 3 did. */
export async function buildListingsV3(db: Db, store: EventStore): Promise<void> {
  const runner = new ProjectionRunner(db, store, [listingsV3])
  await runner.catchUp()
  await runner.stop()
  const { history } = generationTables(listingsProjection, { version: 3, build: 1 })
  await db.query(`alter table ${history} drop column area_m2, drop column bathrooms, drop column public_from`)
}
