import type { AttemptOutcome, Message } from '../../projections/webhooks/delivery-lines.ts'
import { deliver, type DeliveryOptions, type DeliveryOutcome } from './outbound.ts'
import { signedHeaders } from './signature.ts'

/** What one try of a message came to, as the attempts record it. */
export type Sent = { outcome: AttemptOutcome; status: number | null; ms: number | null; detail: string | null }

/** The longest part of a receiver's answer or of a reason kept with an attempt. */
const MAX_DETAIL = 500

function sentOf(outcome: DeliveryOutcome): Sent {
  switch (outcome.kind) {
    case 'delivered':
      return { outcome: 'delivered', status: outcome.status, ms: outcome.ms, detail: null }
    case 'rejected':
      return { outcome: 'rejected', status: outcome.status, ms: outcome.ms, detail: outcome.body.slice(0, MAX_DETAIL) || null }
    case 'redirected':
      return { outcome: 'redirected', status: outcome.status, ms: null, detail: `redirects are not followed${outcome.location ? ` (to ${outcome.location.slice(0, 200)})` : ''}` }
    case 'refused':
      return { outcome: 'refused', status: null, ms: null, detail: outcome.reason.slice(0, MAX_DETAIL) }
    case 'unreachable':
      return { outcome: 'unreachable', status: null, ms: null, detail: outcome.reason.slice(0, MAX_DETAIL) }
    case 'timeout':
      return { outcome: 'timeout', status: null, ms: null, detail: 'no answer before the deadline (5 s)' }
    default: {
      const never: never = outcome
      throw new Error(`unknown outcome ${JSON.stringify(never)}`)
    }
  }
}

/**
 * One signed POST of `message` to `url`: signed at `nowSeconds` with `secret` (Standard Webhooks),
 * the message's id as `webhook-id` on every try, through the outbound guard (src/webhooks/outbound.ts).
 */
export async function sendMessage(url: string, message: Message, secret: string, nowSeconds: number, options: DeliveryOptions): Promise<Sent> {
  const headers = { ...signedHeaders(secret, message.id, nowSeconds, message.body) }
  return sentOf(await deliver(url, { body: message.body, headers }, options))
}
