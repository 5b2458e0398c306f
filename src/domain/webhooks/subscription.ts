import { type Static, Type } from '@sinclair/typebox'
import { CHANGE_KINDS } from '../listings/changes.ts'
import { type Country, Country as CountrySchema } from '../market/vocabulary.ts'
import { fail } from '../../shared/errors.ts'
import type { Decider } from '../decider.ts'
import { Actor, At } from '../schemas.ts'
import { MAX_THRESHOLD_BP, MIN_THRESHOLD_BP } from './zone-alert.ts'

/**
 * An owner's webhook subscriptions (issue 31, decision 0112), pure. All of an owner's subscriptions
 * are events on one stream, `webhooks-<owner>`, so that the per-owner limit is decided against every
 * subscription that owner has, with the stream's revision guarding against a concurrent subscribe.
 * The URL has been checked by the shell (src/webhooks/target.ts) before the command is given: the
 * decider only keeps the record. No event holds a secret: it is derived from the subscription's id.
 */

/** The event types a subscriber chooses from: one per kind of listing change, and the zone alert. */
export const WEBHOOK_EVENT_TYPES = [...CHANGE_KINDS.map((kind) => `listing.${kind}` as const), 'zone.statistics_changed'] as const
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number]
export const WebhookEventType = Type.Union(WEBHOOK_EVENT_TYPES.map((type) => Type.Literal(type)))

/** The most subscriptions an owner may have at once (deleted ones do not count; disabled ones do). */
export const MAX_SUBSCRIPTIONS_PER_OWNER = 25

export const webhooksStream = (ownerId: string) => `webhooks-${ownerId}`

const Subscribed = Type.Object({
  webhook_id: Type.String(),
  owner_id: Type.String(),
  url: Type.String(),
  events: Type.Array(WebhookEventType),
  /** null: every country (listing changes only; a zone alert names its country). */
  country: Type.Union([CountrySchema, Type.Null()]),
  /** The zone's number within `country`; null: every zone. */
  zone: Type.Union([Type.Integer(), Type.Null()]),
  /** The zone alert's threshold in basis points; null without `zone.statistics_changed`. */
  threshold_bp: Type.Union([Type.Integer({ minimum: MIN_THRESHOLD_BP, maximum: MAX_THRESHOLD_BP }), Type.Null()]),
  /** The key that subscribed (its id, never the key). */
  by: Actor,
  at: At,
})

export const WebhookEventSchemas = {
  WebhookSubscribed: Subscribed,
  WebhookUnsubscribed: Type.Object({ webhook_id: Type.String(), owner_id: Type.String(), by: Actor, at: At }),
  /** Deliveries failed for 24 h: nothing more is sent; the subscription stays, shown disabled, with why. */
  WebhookDisabled: Type.Object({ webhook_id: Type.String(), owner_id: Type.String(), reason: Type.String({ maxLength: 500 }), at: At }),
}
type Schemas = typeof WebhookEventSchemas
export type WebhookEvent = { [K in keyof Schemas]: { type: K; data: Static<Schemas[K]> } }[keyof Schemas]

export type WebhookStatus = 'active' | 'disabled' | 'deleted'
export type Subscription = Static<typeof Subscribed> & { status: WebhookStatus; disabled_reason: string | null }
/** An owner's subscriptions, by id, in the order they were made. */
export type OwnerWebhooks = { subscriptions: ReadonlyMap<string, Subscription> }
export const initialWebhooks: OwnerWebhooks = { subscriptions: new Map() }

/** What a subscriber asks for, read from the request body by the route. */
export type SubscriptionRequest = {
  url: string
  events: readonly string[]
  country: Country | null
  zone: number | null
  thresholdBp: number | null
}

export type WebhookCommand =
  | ({ type: 'Subscribe'; webhookId: string; ownerId: string; actor: string; at: string } & SubscriptionRequest)
  | { type: 'Unsubscribe'; webhookId: string; ownerId: string; actor: string; at: string }
  | { type: 'Disable'; webhookId: string; ownerId: string; reason: string; at: string }

/** The events asked for, each once, in the catalogue's order; unknown ones refused by name. */
function checkEvents(events: readonly string[]): WebhookEventType[] {
  const known = WEBHOOK_EVENT_TYPES as readonly string[]
  const unknown = [...new Set(events.filter((e) => !known.includes(e)))]
  if (unknown.length > 0) throw fail.invalidRequest(`unknown event type(s): ${unknown.join(', ')}; known: ${known.join(', ')}`, [{ field: 'events', message: `unknown: ${unknown.join(', ')}` }])
  if (events.length === 0) throw fail.invalidRequest('subscribe to at least one event type', [{ field: 'events', message: 'at least one event type' }])
  return WEBHOOK_EVENT_TYPES.filter((e) => events.includes(e))
}

/** The subscription's filter and threshold, consistent with the events asked for. */
function checkScope(request: SubscriptionRequest, events: readonly WebhookEventType[]) {
  const alerts = events.includes('zone.statistics_changed')
  if (request.zone !== null && request.country === null) {
    throw fail.invalidRequest('a zone is only meaningful with its country', [{ field: 'zone', message: 'only with country' }])
  }
  if (alerts && request.country === null) {
    throw fail.invalidRequest('zone.statistics_changed needs a country (and optionally a zone)', [{ field: 'country', message: 'required with zone.statistics_changed' }])
  }
  if (alerts && request.thresholdBp === null) {
    throw fail.invalidRequest('zone.statistics_changed needs threshold_pct', [{ field: 'threshold_pct', message: 'required with zone.statistics_changed' }])
  }
  if (!alerts && request.thresholdBp !== null) {
    throw fail.invalidRequest('threshold_pct is only meaningful with zone.statistics_changed', [{ field: 'threshold_pct', message: 'only with zone.statistics_changed' }])
  }
}

const counted = (state: OwnerWebhooks) => [...state.subscriptions.values()].filter((s) => s.status !== 'deleted').length

function subscribed(command: Extract<WebhookCommand, { type: 'Subscribe' }>, state: OwnerWebhooks): WebhookEvent[] {
  if (state.subscriptions.has(command.webhookId)) throw fail.conflict(`webhook ${command.webhookId} already exists`)
  const events = checkEvents(command.events)
  checkScope(command, events)
  if (counted(state) >= MAX_SUBSCRIPTIONS_PER_OWNER) {
    throw fail.conflict(`owner ${command.ownerId} has ${MAX_SUBSCRIPTIONS_PER_OWNER} webhooks, the most allowed: delete one first`)
  }
  const { webhookId, ownerId, url, country, zone, thresholdBp, actor, at } = command
  return [{ type: 'WebhookSubscribed', data: { webhook_id: webhookId, owner_id: ownerId, url, events, country, zone, threshold_bp: thresholdBp, by: actor, at } }]
}

/** A subscription of this owner that is not deleted; anything else is not found (another owner's included). */
export function existingWebhook(state: OwnerWebhooks, webhookId: string): Subscription {
  const subscription = state.subscriptions.get(webhookId)
  if (!subscription || subscription.status === 'deleted') throw fail.notFound(`no webhook ${webhookId}`)
  return subscription
}

export function decideWebhooks(command: WebhookCommand, state: OwnerWebhooks): WebhookEvent[] {
  switch (command.type) {
    case 'Subscribe':
      return subscribed(command, state)
    case 'Unsubscribe': {
      existingWebhook(state, command.webhookId)
      return [{ type: 'WebhookUnsubscribed', data: { webhook_id: command.webhookId, owner_id: command.ownerId, by: command.actor, at: command.at } }]
    }
    case 'Disable': {
      // Deleted or already disabled meanwhile: nothing to record (the worker's decision came late).
      const subscription = state.subscriptions.get(command.webhookId)
      if (!subscription || subscription.status !== 'active') return []
      return [{ type: 'WebhookDisabled', data: { webhook_id: command.webhookId, owner_id: command.ownerId, reason: command.reason, at: command.at } }]
    }
    default: {
      const never: never = command
      throw new Error(`unknown command ${JSON.stringify(never)}`)
    }
  }
}

function withStatus(state: OwnerWebhooks, webhookId: string, change: Partial<Subscription>): OwnerWebhooks {
  const subscription = state.subscriptions.get(webhookId)
  if (!subscription) return state
  return { subscriptions: new Map(state.subscriptions).set(webhookId, { ...subscription, ...change }) }
}

export function evolveWebhooks(state: OwnerWebhooks, event: WebhookEvent): OwnerWebhooks {
  switch (event.type) {
    case 'WebhookSubscribed':
      return { subscriptions: new Map(state.subscriptions).set(event.data.webhook_id, { ...event.data, status: 'active', disabled_reason: null }) }
    case 'WebhookUnsubscribed':
      return withStatus(state, event.data.webhook_id, { status: 'deleted' })
    case 'WebhookDisabled':
      return withStatus(state, event.data.webhook_id, { status: 'disabled', disabled_reason: event.data.reason })
    default: {
      const never: never = event
      throw new Error(`unknown event ${JSON.stringify(never)}`)
    }
  }
}

export const isWebhookEvent = (event: { type: string }): event is WebhookEvent => Object.hasOwn(WebhookEventSchemas, event.type)

/** An owner's webhooks: subscribing (which events, where, up to the limit), deleting, and disabling after a day of failures. */
export const webhooksDecider: Decider<WebhookCommand, WebhookEvent, OwnerWebhooks> = {
  decide: decideWebhooks,
  evolve: evolveWebhooks,
  initialState: initialWebhooks,
  is: isWebhookEvent,
}
