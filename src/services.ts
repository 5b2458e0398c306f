/**
 * The services the routes call, assembled on the storage and the read models in memory: briefings,
 * with the writer configuration picks (OpenAI, or the local analyst), and webhooks.
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
import { WebhookService } from './webhooks/service.ts'
import { DeliveryWorker } from './webhooks/worker.ts'
import { cents } from './domain/market/rounding.ts'
import { zoneSlug } from './domain/market/zone-name.ts'
import { listingFeedOn } from './listings/feed-deps.ts'
import { noMetrics } from './metrics/port.ts'
import { subscriptionCounts } from '../projections/webhooks/queries.ts'
import type { DeliveryOptions } from './webhooks/outbound.ts'
import { BriefingReadModel } from '../projections/briefings/read-model.ts'
import { DeliveryLines } from '../projections/webhooks/delivery-lines.ts'
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

/** How outbound webhook calls trust a target: https and public addresses only, unless WEBHOOKS_ALLOW_LOCAL. */
export const deliveryOptionsOf = (config: Pick<Config, 'webhooksAllowLocal'>): DeliveryOptions => ({
  allowHttp: config.webhooksAllowLocal,
  allowPrivate: config.webhooksAllowLocal,
})

/** Webhook subscriptions on this storage, signed with `signingKey` (null: webhooks are off). */
export const webhookServiceOn = (storage: Storage, signingKey: string | null, delivery: DeliveryOptions, clock: Clock, random: RandomSource) =>
  new WebhookService({ store: storage.store, lines: new DeliveryLines(storage.db), signingKey, delivery, now: () => clock().getTime(), random })

/**
 * The delivery worker on this storage (not started): zone alerts read the published figures of
 * `zones`, attempts and lags are reported to `metrics`, and its gauges read the subscriptions.
 */
export function webhookWorkerOn(
  storage: Storage,
  zones: Pick<ReadyZones, 'zone'>,
  signingKey: string,
  delivery: DeliveryOptions,
  clock: Clock,
  random: RandomSource,
  metrics: Metrics = noMetrics,
  onError: (error: unknown) => void = () => {},
): DeliveryWorker {
  const lines = new DeliveryLines(storage.db)
  metrics.webhooksFrom(async () => ({ subscriptions: await subscriptionCounts(storage.db), waiting: (await lines.backlog()).waiting }))
  return new DeliveryWorker({
    db: storage.db,
    lines,
    feed: listingFeedOn(storage, metrics),
    store: storage.store,
    zoneFigure: async (country, zone) => {
      const figure = (await zones.zone(country, zoneSlug(zone), clock()))?.median_ppm2_usd
      return figure == null ? null : cents(figure)
    },
    signingKey,
    delivery,
    now: () => clock().getTime(),
    random,
    holder: `${random.base62(12)}`,
    report: { attempted: (outcome) => metrics.webhookAttempted(outcome), delivered: (lag) => metrics.webhookDelivered(lag) },
    onError,
  })
}
