import { defineOperation } from '../http/operation.ts'
import { fail } from '../shared/errors.ts'
import { ATTEMPT_EXAMPLE } from './examples.ts'
import { deliveriesInputs, type WebhookDeps } from './inputs.ts'
import { DeliveriesResponse } from './schemas.ts'

/** GET /webhooks/{id}/deliveries: the latest attempts. */
export const listDeliveries = defineOperation({
  method: 'GET',
  path: '/webhooks/:id/deliveries',
  access: 'read',
  operationId: 'listWebhookDeliveries',
  tag: 'Webhooks',
  summary: 'A webhook\'s latest delivery attempts, newest first: what was sent, when, and what the receiver answered',
  description: 'Each attempt of each message (a retry is another attempt with the same `webhook_id`), pings included, kept 7 days.',
  inputs: deliveriesInputs,
  ok: DeliveriesResponse,
  okExample: { ok: true, count: 1, deliveries: [ATTEMPT_EXAMPLE] },
  errors: [fail.notFound('no webhook whk_4Kq9TzR2mXb7Lp3N')],
  handler: (deps: WebhookDeps) => async ({ caller, params, query }) => {
    const deliveries = await deps.webhooks.deliveries(caller, params.id, query.limit)
    return { ok: true as const, count: deliveries.length, deliveries }
  },
})
