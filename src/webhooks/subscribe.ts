import { MAX_SUBSCRIPTIONS_PER_OWNER, webhooksDecider } from '../domain/webhooks/subscription.ts'
import { EventStoreUnavailable } from '../eventstore/port.ts'
import { readJsonBody } from '../http/body.ts'
import { refusalOf } from '../http/openapi.ts'
import { defineOperation } from '../http/operation.ts'
import { parseInput } from '../shared/input-schema.ts'
import { WEBHOOK_EXAMPLE } from './examples.ts'
import type { WebhookDeps } from './inputs.ts'
import { assertTarget } from './outbound.ts'
import { SubscribeBody, SubscribedResponse } from './schemas.ts'
import { webhooksOff } from './service.ts'

const tooMany = refusalOf(() =>
  webhooksDecider.decide(
    { type: 'Subscribe', webhookId: 'whk_new', ownerId: 'acme-corp', actor: 'key_example', at: '2026-05-07T10:20:30.000Z', url: 'https://hooks.example.com/a', events: ['listing.listed'], country: null, zone: null, thresholdBp: null },
    {
      subscriptions: new Map(
        Array.from({ length: MAX_SUBSCRIPTIONS_PER_OWNER }, (_, i) => [
          `whk_${i}`,
          { webhook_id: `whk_${i}`, owner_id: 'acme-corp', url: 'https://hooks.example.com/a', events: ['listing.listed'], country: null, zone: null, threshold_bp: null, by: 'key_example', at: '2026-05-07T10:20:30.000Z', status: 'active', disabled_reason: null },
        ]),
      ),
    },
  ),
)

/** POST /webhooks: subscribe a URL to listing changes and zone alerts (docs/api.md, "Webhooks"). */
export const subscribeWebhook = defineOperation({
  method: 'POST',
  path: '/webhooks',
  access: 'write',
  operationId: 'createWebhook',
  tag: 'Webhooks',
  summary: 'Subscribe an https URL to listing changes and zone alerts; the signing secret is shown this once',
  description:
    'Deliveries are POSTed to `url`, signed per the Standard Webhooks specification with the `secret` of this answer (shown once: ' +
    'keep it), at least once and in order, with the same `webhook-id` on every retry; failing ones are retried for 24 hours, then ' +
    `the webhook is disabled. Listing changes are those of GET /listings/changes after the moment of subscribing. At most ${MAX_SUBSCRIPTIONS_PER_OWNER} ` +
    'webhooks per owner. The URL must be https and its host must resolve to public addresses only, checked again at each delivery.',
  body: {
    schema: SubscribeBody,
    examples: { price_moves: { url: 'https://hooks.example.com/mirador', events: ['listing.price_changed', 'zone.statistics_changed'], country: 'GT', zone: 'Zona 10', threshold_pct: 5 } },
  },
  ok: SubscribedResponse,
  okStatus: 201,
  okExample: { ok: true, webhook: WEBHOOK_EXAMPLE, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' },
  errors: [
    refusalOf(() => parseInput(SubscribeBody, { url: 'https://hooks.example.com/a', events: ['listing.sold'] }, 'body')),
    refusalOf(() => assertTarget('http://169.254.169.254/latest', { allowHttp: false })),
    tooMany,
    'payload_too_large',
    webhooksOff(),
    new EventStoreUnavailable('example'),
  ],
  handler: (deps: WebhookDeps) => async ({ request, set, caller }) => {
    const { webhook, secret } = await deps.webhooks.subscribe(caller, await readJsonBody(request))
    set.status = 201
    set.headers.location = `/api/v1/webhooks/${webhook.id}`
    return { ok: true as const, webhook, secret }
  },
})
