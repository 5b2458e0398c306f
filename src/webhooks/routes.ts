import type { Gate } from '../http/gate.ts'
import { mountOperations } from '../http/operation.ts'
import { deleteWebhook } from './delete-webhook.ts'
import type { WebhookDeps } from './inputs.ts'
import { listDeliveries } from './list-deliveries.ts'
import { listWebhooks } from './list-webhooks.ts'
import { pingWebhook } from './ping-webhook.ts'
import { subscribeWebhook } from './subscribe.ts'

/** Webhooks: the change feed and zone alerts delivered (docs/api.md, "Webhooks"). */
export const WEBHOOK_OPERATIONS = [subscribeWebhook, listWebhooks, listDeliveries, pingWebhook, deleteWebhook]

/** The webhook routes alone behind `gate`, relative to the API prefix (as their specs serve them). */
export const webhookRoutes = (deps: WebhookDeps & { gate: Gate }) => mountOperations('webhooks', deps.gate, WEBHOOK_OPERATIONS, deps)
