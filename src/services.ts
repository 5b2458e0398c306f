/**
 * The services the routes call, assembled on the storage and the read models in memory: briefings,
 * with the writer configuration picks (OpenAI, or the local analyst).
 */
import { zoneFactsFrom } from './briefings/facts-source.ts'
import { writerFor } from './briefings/openai-writer.ts'
import { type BriefingService, briefingService } from './briefings/service.ts'
import type { Config } from './config.ts'
import type { BriefingWriter } from './domain/briefings/writer.ts'
import type { Metrics } from './metrics/port.ts'
import { meteredWriter } from './metrics-mapping.ts'
import type { Clock, RandomSource } from './shared/random.ts'
import type { Storage } from './storage.ts'
import { BriefingReadModel } from '../projections/briefings/read-model.ts'
import type { ListingInventory } from '../projections/listings/inventory.ts'
import type { ReadyZones } from '../projections/listings/ready-zones.ts'

/** Briefings on this storage: the writer is OpenAI when configured, else the local analyst. */
export function briefingServiceOn(
  storage: Storage,
  market: { zones: ReadyZones; inventory: ListingInventory },
  config: Pick<Config, 'openai' | 'quotas' | 'idempotencyLeaseMs'>,
  clock: Clock,
  random: RandomSource,
  writer: BriefingWriter = writerFor(config.openai),
  metrics?: Metrics,
): BriefingService {
  return briefingService({
    store: storage.store,
    readModel: new BriefingReadModel(storage.db),
    facts: zoneFactsFrom(market.zones, market.inventory),
    writer: metrics ? meteredWriter(writer, metrics) : writer,
    clock,
    random,
    quotas: config.quotas,
    idempotencyLeaseMs: config.idempotencyLeaseMs,
  })
}
