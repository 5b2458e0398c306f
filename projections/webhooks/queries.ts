import type { Db } from '../../src/db/port.ts'
import type { Country } from '../../src/domain/market/vocabulary.ts'
import type { WebhookEventType, WebhookStatus } from '../../src/domain/webhooks/subscription.ts'
import { liveTables } from '../engine/live-tables.ts'
import { webhooksProjection } from './subscriptions.ts'

/** A subscription as the delivery worker reads it. */
export type DeliverySubscription = {
  webhookId: string
  ownerId: string
  url: string
  events: WebhookEventType[]
  country: Country | null
  zone: number | null
  thresholdBp: number | null
  status: WebhookStatus
}

/** The subscription `webhookId` in the live generation, or null. */
export async function subscriptionOf(db: Db, webhookId: string): Promise<DeliverySubscription | null> {
  const { tables } = await liveTables(db).of(webhooksProjection)
  const [r] = await db.query(`select webhook_id, owner_id, url, events, country, zone_no, threshold_bp, status from ${tables.webhooks} where webhook_id = $1`, [webhookId])
  if (!r) return null
  return {
    webhookId: r.webhook_id as string,
    ownerId: r.owner_id as string,
    url: r.url as string,
    events: (typeof r.events === 'string' ? JSON.parse(r.events) : r.events) as WebhookEventType[],
    country: (r.country as Country | null) ?? null,
    zone: r.zone_no == null ? null : Number(r.zone_no),
    thresholdBp: r.threshold_bp == null ? null : Number(r.threshold_bp),
    status: r.status as WebhookStatus,
  }
}

/** How many subscriptions are in each status (metrics). */
export async function subscriptionCounts(db: Db): Promise<Record<WebhookStatus, number>> {
  const { tables } = await liveTables(db).of(webhooksProjection)
  const rows = await db.query(`select status, count(*) as n from ${tables.webhooks} group by status`)
  const counts: Record<WebhookStatus, number> = { active: 0, disabled: 0, deleted: 0 }
  for (const r of rows) counts[r.status as WebhookStatus] = Number(r.n)
  return counts
}
