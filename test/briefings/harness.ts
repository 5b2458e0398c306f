import { ProjectionRunner } from '../../projections/engine/runner.ts'
import { briefingCacheProjection } from '../../projections/briefings/cache.ts'
import { BriefingReadModel } from '../../projections/briefings/read-model.ts'
import { briefingUsageProjection } from '../../projections/briefings/usage.ts'
import { type BriefingService, briefingService } from '../../src/briefings/service.ts'
import { type BriefingServiceDeps } from '../../src/briefings/deps.ts'
import type { Db } from '../../src/db/port.ts'
import type { EventStore } from '../../src/eventstore/port.ts'

/** The two briefing read models, as the server lists them among all (src/storage.ts). */
export const BRIEFING_PROJECTIONS = [briefingCacheProjection, briefingUsageProjection]

/**
 * The briefing read models on `db`, kept current from `store` by a projection runner as the server's
 * runner keeps them (the service itself only reads them). `stop` before closing the store.
 */
export async function followBriefings(db: Db, store: EventStore): Promise<{ runner: ProjectionRunner; errors: unknown[]; stop(): Promise<void> }> {
  const runner = new ProjectionRunner(db, store, BRIEFING_PROJECTIONS)
  const errors: unknown[] = []
  await runner.start((error) => errors.push(error))
  return { runner, errors, stop: () => runner.stop() }
}

/** A briefing service on `db` and `store` (whose read models something keeps current, see followBriefings). */
export const briefingServiceOn = (db: Db, store: EventStore, deps: Omit<BriefingServiceDeps, 'store' | 'readModel'>): BriefingService =>
  briefingService({ store, readModel: new BriefingReadModel(db), ...deps })
