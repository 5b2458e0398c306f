import { defineOperation } from '../http/operation.ts'
import { fail } from '../shared/errors.ts'
import { ATTEMPT_EXAMPLE } from './examples.ts'
import { type WebhookDeps, webhookInputs } from './inputs.ts'
import { PingResponse } from './schemas.ts'
import { webhooksOff } from './service.ts'

/** POST /webhooks/{id}/ping: one signed test message, now. */
export const pingWebhook = defineOperation({
  method: 'POST',
  path: '/webhooks/:id/ping',
  access: 'write',
  operationId: 'pingWebhook',
  tag: 'Webhooks',
  summary: 'Send a signed webhook.ping to the webhook now and answer what the receiver did',
  description:
    'The ping is sent at once, outside the line of deliveries (it never delays or replaces one), signed like every delivery, ' +
    'and recorded among the attempts. The answer is 200 whatever the receiver did: `delivery.outcome` says it.',
  inputs: webhookInputs,
  ok: PingResponse,
  okExample: { ok: true, delivery: { ...ATTEMPT_EXAMPLE, webhook_id: 'ping_7fQ2kLx9Vb3RmT8s', type: 'webhook.ping' } },
  errors: [fail.notFound('no webhook whk_4Kq9TzR2mXb7Lp3N'), webhooksOff()],
  handler: (deps: WebhookDeps) => async ({ caller, params }) => ({ ok: true as const, delivery: await deps.webhooks.ping(caller, params.id) }),
})
