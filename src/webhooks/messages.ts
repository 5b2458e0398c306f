import type { ChangeRow } from '../../projections/listings/change-feed.ts'
import type { Message } from '../../projections/webhooks/delivery-lines.ts'
import type { ChangeFilter } from '../domain/listings/changes.ts'
import type { Country } from '../domain/market/vocabulary.ts'
import type { ZoneAlertEvent } from '../domain/webhooks/zone-alert.ts'
import type { WebhookEventType } from '../domain/webhooks/subscription.ts'
import { changeSeen } from '../listings/change-seen.ts'

/**
 * What a subscriber receives (docs/api.md, "Webhooks"): the Standard Webhooks payload shape,
 * `{type, timestamp, data}`. A listing change's `data` is the change feed's entry, cursor included
 * (a receiver may switch to GET /listings/changes from it); a zone alert's, the zone's figures.
 * The id is derived from the subscription, the change's log position and the message's place among
 * that change's messages: the same on every retry, in every process.
 */
export const messageId = (webhookId: string, position: number, index: number) => `msg_${webhookId}_${position}_${index}`

const bodyOf = (type: string, timestamp: string, data: unknown) => JSON.stringify({ type, timestamp, data })

/** The listing change of `row` as the subscription's filter sees it, when it subscribed to that kind. */
export function listingMessage(webhookId: string, row: ChangeRow, cursor: string, filter: ChangeFilter, events: readonly WebhookEventType[], index: number): Message | null {
  const change = changeSeen(row, cursor, filter)
  if (!change) return null
  const type = `listing.${change.kind}` as const
  if (!events.includes(type)) return null
  return { id: messageId(webhookId, row.position, index), type, body: bodyOf(type, change.at, change) }
}

/** A zone alert decided for the change at `position`. */
export function zoneAlertMessage(webhookId: string, position: number, event: ZoneAlertEvent, index: number): Message {
  const { subscription_id: _subscription, position: _position, ...data } = event.data
  return { id: messageId(webhookId, position, index), type: 'zone.statistics_changed', body: bodyOf('zone.statistics_changed', event.data.at, data) }
}

/** A ping: sent at once by POST /webhooks/{id}/ping, outside the line, with an id of its own. */
export const pingMessage = (webhookId: string, pingId: string, at: string): Message => ({
  id: `ping_${pingId}`,
  type: 'webhook.ping',
  body: bodyOf('webhook.ping', at, { webhook_id: webhookId }),
})

/** The zones a change touches (where the listing is, and where it was when it moved), each once. */
export function touchedZones(row: ChangeRow): { country: Country; zone: number }[] {
  const { country, zone_no, from_country, from_zone_no } = row.place
  const zones = [{ country: country as Country, zone: zone_no }]
  if (from_country !== null && from_zone_no !== null && (from_country !== country || from_zone_no !== zone_no)) {
    zones.push({ country: from_country as Country, zone: from_zone_no })
  }
  return zones
}
