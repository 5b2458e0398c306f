import type { AttemptRecord, WebhookRecord } from './schemas.ts'

/** The documents' examples: one subscription and one attempt, as the routes answer them. */
export const WEBHOOK_EXAMPLE: WebhookRecord = {
  id: 'whk_4Kq9TzR2mXb7Lp3N',
  url: 'https://hooks.example.com/mirador',
  events: ['listing.price_changed', 'zone.statistics_changed'],
  country: 'GT',
  zone: 'Zona 10',
  threshold_pct: 5,
  status: 'active',
  disabled_reason: null,
  created_at: '2026-05-07T10:20:30.000Z',
  delivery: { pending_messages: 0, failing_since: null, next_attempt_at: null },
}

export const ATTEMPT_EXAMPLE: AttemptRecord = {
  webhook_id: 'msg_whk_4Kq9TzR2mXb7Lp3N_48213_0',
  type: 'listing.price_changed',
  attempt: 1,
  at: '2026-05-07T10:21:02.114Z',
  outcome: 'delivered',
  status: 204,
  ms: 87,
  detail: null,
}
