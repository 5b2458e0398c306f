import { defineOperation } from '../http/operation.ts'
import { fail } from '../shared/errors.ts'
import { WEBHOOK_EXAMPLE } from './examples.ts'
import { type WebhookDeps, webhookInputs } from './inputs.ts'
import { WebhookResponse } from './schemas.ts'

/** DELETE /webhooks/{id}: stop a webhook for good. */
export const deleteWebhook = defineOperation({
  method: 'DELETE',
  path: '/webhooks/:id',
  access: 'write',
  operationId: 'deleteWebhook',
  tag: 'Webhooks',
  summary: 'Delete a webhook: nothing more is sent to it, and it no longer counts toward the limit',
  description: 'A message being delivered at that moment may still arrive once. Another owner\'s webhook is not found (404).',
  inputs: webhookInputs,
  ok: WebhookResponse,
  okExample: { ok: true, webhook: { ...WEBHOOK_EXAMPLE, status: 'deleted', delivery: null } },
  errors: [fail.notFound('no webhook whk_4Kq9TzR2mXb7Lp3N')],
  handler: (deps: WebhookDeps) => async ({ caller, params }) => ({ ok: true as const, webhook: await deps.webhooks.remove(caller, params.id) }),
})
