import { Type, type Static } from '@sinclair/typebox'
import { COUNTRIES, Country } from '../domain/market/vocabulary.ts'
import { ZoneInput } from '../domain/market/zone-name.ts'
import { MAX_SUBSCRIPTIONS_PER_OWNER, WebhookEventType } from '../domain/webhooks/subscription.ts'
import { anyCaseOf, expecting } from '../shared/input-schema.ts'
import { MAX_URL_LENGTH } from './outbound.ts'

/** The body of POST /webhooks. */
export const SubscribeBody = Type.Object(
  {
    url: expecting(
      Type.String({
        minLength: 1,
        maxLength: MAX_URL_LENGTH,
        description: 'where deliveries are POSTed: an https URL whose host resolves to public addresses only (no redirects are followed)',
        examples: ['https://hooks.example.com/mirador'],
      }),
      `Expected an https URL of at most ${MAX_URL_LENGTH} characters`,
    ),
    events: Type.Array(WebhookEventType, {
      minItems: 1,
      maxItems: 5,
      description: 'what to receive: listing changes by kind (as GET /listings/changes has them) and zone alerts',
    }),
    country: Type.Optional(anyCaseOf(COUNTRIES, { description: 'only this country; every country when absent (zone alerts need one)' })),
    zone: Type.Optional({ ...ZoneInput, description: `${ZoneInput.description}; only this zone of the country` }),
    threshold_pct: Type.Optional(
      Type.Number({
        exclusiveMinimum: 0,
        maximum: 1000,
        description: 'zone.statistics_changed only: how far (in percent, up to 2 decimals, 0.01 to 1000) a zone\'s median price per m² must move from the value last sent to you',
        examples: [5],
      }),
    ),
  },
  {
    additionalProperties: false,
    // A zone needs its country, stated for the document's readers and tools; the server applies it in
    // the subscription's decider (src/domain/webhooks/subscription.ts). The zone alert's needs (a
    // country and a threshold, and a threshold only with it) are stated in words: OpenAPI tools
    // (Redocly) do not check examples against if/then schemas.
    dependentRequired: { zone: ['country'] },
  },
)

export const DeliveryState = Type.Object({
  pending_messages: Type.Integer({ description: 'messages of the change being delivered still to send (0: caught up, or the next change is being read)' }),
  failing_since: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'when the message at the head of the line first failed; null when it has not' }),
  next_attempt_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'when it is tried again; null when it has not failed' }),
})
export type DeliveryState = Static<typeof DeliveryState>

export const WebhookRecord = Type.Object({
  id: Type.String({ description: 'whk_ and 16 letters or digits' }),
  url: Type.String(),
  events: Type.Array(WebhookEventType),
  country: Type.Union([Country, Type.Null()]),
  zone: Type.Union([Type.String(), Type.Null()]),
  threshold_pct: Type.Union([Type.Number(), Type.Null()]),
  status: Type.Union([Type.Literal('active'), Type.Literal('disabled'), Type.Literal('deleted')], {
    description: 'disabled: deliveries failed for 24 hours and stopped (see disabled_reason); deleted: by DELETE',
  }),
  disabled_reason: Type.Union([Type.String(), Type.Null()]),
  created_at: Type.String({ format: 'date-time' }),
  delivery: Type.Union([DeliveryState, Type.Null()], { description: 'where its deliveries stand; null once deleted' }),
})
export type WebhookRecord = Static<typeof WebhookRecord>

export const AttemptRecord = Type.Object({
  webhook_id: Type.String({ description: 'the message\'s `webhook-id` header: the same on every attempt of one message' }),
  type: Type.String({ description: 'the message\'s type: listing.listed … zone.statistics_changed, webhook.ping' }),
  attempt: Type.Integer({ description: '1 for the first attempt of the message' }),
  at: Type.String({ format: 'date-time' }),
  outcome: Type.Union(['delivered', 'rejected', 'redirected', 'refused', 'unreachable', 'timeout'].map((o) => Type.Literal(o)), {
    description: 'delivered: a 2xx; rejected: another status; redirected: a 3xx (never followed); refused: the address is not one Mirador sends to; unreachable: no connection; timeout: no answer within 5 s',
  }),
  status: Type.Union([Type.Integer(), Type.Null()], { description: 'the receiver\'s HTTP status, when it answered' }),
  ms: Type.Union([Type.Integer(), Type.Null()], { description: 'milliseconds to the answer' }),
  detail: Type.Union([Type.String(), Type.Null()], { description: 'the first 500 characters of a refusing answer, or why nothing was sent' }),
})
export type AttemptRecord = Static<typeof AttemptRecord>

export const SubscribedResponse = Type.Object({
  ok: Type.Literal(true),
  webhook: WebhookRecord,
  secret: Type.String({ description: 'the signing secret (whsec_…), shown this once: verify every delivery with it (Standard Webhooks)' }),
})
export const WebhooksResponse = Type.Object({
  ok: Type.Literal(true),
  count: Type.Integer(),
  limit: Type.Integer({ description: `the most webhooks an owner may have: ${MAX_SUBSCRIPTIONS_PER_OWNER}` }),
  webhooks: Type.Array(WebhookRecord),
})
export const WebhookResponse = Type.Object({ ok: Type.Literal(true), webhook: WebhookRecord })
export const DeliveriesResponse = Type.Object({ ok: Type.Literal(true), count: Type.Integer(), deliveries: Type.Array(AttemptRecord) })
export const PingResponse = Type.Object({ ok: Type.Literal(true), delivery: AttemptRecord })
