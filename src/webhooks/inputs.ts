import { Type } from '@sinclair/typebox'
import { httpInputs } from '../http/inputs.ts'
import { defaulted } from '../shared/input-schema.ts'
import type { WebhookService } from './service.ts'

export type WebhookDeps = { webhooks: WebhookService }

/** The webhook of the path. */
export const WebhookParams = Type.Object({
  id: Type.String({ pattern: '^whk_[0-9A-Za-z]{16}$', description: 'the webhook\'s id, as POST /webhooks answered it', examples: ['whk_4Kq9TzR2mXb7Lp3N'] }),
})
export const webhookInputs = httpInputs({ params: WebhookParams })

/** Attempts one answer of GET /webhooks/{id}/deliveries lists at most. */
export const MAX_DELIVERIES = 100
export const deliveriesInputs = httpInputs({
  params: WebhookParams,
  query: Type.Object({ limit: defaulted(Type.Integer({ minimum: 1, maximum: MAX_DELIVERIES, description: 'attempts, newest first' }), 20) }),
})
