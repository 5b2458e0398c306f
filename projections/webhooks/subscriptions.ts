import type { RecordedEvent } from '../../src/eventstore/port.ts'
import { isWebhookEvent } from '../../src/domain/webhooks/subscription.ts'
import { type Projection, type RowChange, sql, type Tables } from '../engine/projection.ts'

/**
 * One row per webhook subscription, for the delivery worker (src/webhooks/worker.ts): which are
 * active, what each follows and from which log position (the position of its `WebhookSubscribed`:
 * a subscriber is sent what happened after it subscribed). The API answers an owner's own
 * subscriptions from the owner's stream instead, so that they are there the moment they are made.
 */
export const webhooksProjection: Projection<'webhooks'> = {
  name: 'webhooks',
  version: 1,
  categories: ['webhooks'],
  tables: { webhooks: 'webhooks' },
  schema: (t) => [
    `create table if not exists ${t.webhooks} (
      webhook_id text primary key,
      owner_id text not null,
      url text not null,
      events jsonb not null,
      country text,
      zone_no integer,
      threshold_bp integer,
      status text not null,
      subscribed_at timestamptz not null,
      subscribed_position bigint not null,
      disabled_reason text,
      position bigint not null
    )`,
  ],
  indexes: (t) => [`create index if not exists ${t.webhooks}_owner on ${t.webhooks} (owner_id)`],
  apply(event: RecordedEvent, t: Tables<'webhooks'>): RowChange[] {
    const domain = { type: event.type, data: event.data }
    if (!isWebhookEvent(domain)) return []
    switch (domain.type) {
      case 'WebhookSubscribed': {
        const d = domain.data
        return [
          sql(
            `insert into ${t.webhooks}
               (webhook_id, owner_id, url, events, country, zone_no, threshold_bp, status, subscribed_at, subscribed_position, position)
             values ($1, $2, $3, $4::text::jsonb, $5, $6, $7, 'active', $8, $9, $9)`,
            d.webhook_id,
            d.owner_id,
            d.url,
            JSON.stringify(d.events),
            d.country,
            d.zone,
            d.threshold_bp,
            d.at,
            event.position,
          ),
        ]
      }
      case 'WebhookUnsubscribed':
        return [sql(`update ${t.webhooks} set status = 'deleted', position = $2 where webhook_id = $1`, domain.data.webhook_id, event.position)]
      case 'WebhookDisabled':
        return [
          sql(
            `update ${t.webhooks} set status = 'disabled', disabled_reason = $2, position = $3 where webhook_id = $1`,
            domain.data.webhook_id,
            domain.data.reason,
            event.position,
          ),
        ]
      default: {
        const never: never = domain
        throw new Error(`unhandled ${JSON.stringify(never)}`)
      }
    }
  },
}
