import { MAX_SUBSCRIPTIONS_PER_OWNER } from '../domain/webhooks/subscription.ts'
import { defineOperation } from '../http/operation.ts'
import { WEBHOOK_EXAMPLE } from './examples.ts'
import type { WebhookDeps } from './inputs.ts'
import { WebhooksResponse } from './schemas.ts'

/** GET /webhooks: the caller's owner's webhooks. */
export const listWebhooks = defineOperation({
  method: 'GET',
  path: '/webhooks',
  access: 'read',
  operationId: 'listWebhooks',
  tag: 'Webhooks',
  summary: 'Your webhooks: what each receives, whether it is active or disabled (and why), where its deliveries stand',
  description: `The owner's webhooks (deleted ones aside), oldest first, never with their secrets. At most ${MAX_SUBSCRIPTIONS_PER_OWNER}.`,
  ok: WebhooksResponse,
  okExample: { ok: true, count: 1, limit: MAX_SUBSCRIPTIONS_PER_OWNER, webhooks: [WEBHOOK_EXAMPLE] },
  errors: [],
  handler: (deps: WebhookDeps) => async ({ caller }) => {
    const webhooks = await deps.webhooks.list(caller)
    return { ok: true as const, count: webhooks.length, limit: MAX_SUBSCRIPTIONS_PER_OWNER, webhooks }
  },
})
