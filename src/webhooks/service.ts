import type { DeliveryLines } from '../../projections/webhooks/delivery-lines.ts'
import { handleCommandRetrying, loadAggregate } from '../eventstore/command-handler.ts'
import type { EventStore } from '../eventstore/port.ts'
import type { Principal } from '../http/authenticate.ts'
import { zoneName, zoneNumberOfName } from '../domain/market/zone-name.ts'
import { existingWebhook, type OwnerWebhooks, type Subscription, type WebhookCommand, webhooksDecider, webhooksStream } from '../domain/webhooks/subscription.ts'
import { percentOfThreshold, thresholdOfPercent } from '../domain/webhooks/zone-alert.ts'
import { fail } from '../shared/errors.ts'
import { parseInput } from '../shared/input-schema.ts'
import type { RandomSource } from '../shared/random.ts'
import { pingMessage } from './messages.ts'
import { assertTarget, type DeliveryOptions } from './outbound.ts'
import { sendMessage } from './sender.ts'
import { derivedSecret } from './signature.ts'
import { type AttemptRecord, type DeliveryState, SubscribeBody, type WebhookRecord } from './schemas.ts'

export type WebhookServiceDeps = {
  store: EventStore
  lines: DeliveryLines
  /** The deployment's signing key (WEBHOOK_SIGNING_KEY); null: webhooks are off (503). */
  signingKey: string | null
  /** How far outbound calls trust a target, and how they are made (the same for the worker and pings). */
  delivery: DeliveryOptions
  now(): number
  random: RandomSource
}

/** The refusal of a server without a signing key (the routes' documents show it). */
export const webhooksOff = () => fail.serviceUnavailable('webhooks are off on this server: it has no WEBHOOK_SIGNING_KEY (see the README)')

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())

/**
 * What the webhook routes do, for the owner of the calling key. An owner's subscriptions are read
 * from its stream (`webhooks-<owner>`), not from a read model: a subscription is there the moment it
 * is made, and another owner's is not found (404), never forbidden, so ids reveal nothing.
 */
export class WebhookService {
  constructor(private readonly deps: WebhookServiceDeps) {}

  private key(): string {
    if (this.deps.signingKey === null) throw webhooksOff()
    return this.deps.signingKey
  }

  private async decide(caller: Principal, command: WebhookCommand): Promise<OwnerWebhooks> {
    const { state } = await handleCommandRetrying(this.deps.store, webhooksStream(caller.ownerId), webhooksDecider, (s) => webhooksDecider.decide(command, s), () => this.deps.random.uuid())
    return state
  }

  private async own(caller: Principal, webhookId: string): Promise<Subscription> {
    const { state } = await loadAggregate(this.deps.store, webhooksStream(caller.ownerId), webhooksDecider)
    return existingWebhook(state, webhookId)
  }

  /** POST /webhooks: the subscription, and its signing secret, shown this once. */
  async subscribe(caller: Principal, body: unknown): Promise<{ webhook: WebhookRecord; secret: string }> {
    const signingKey = this.key()
    const asked = parseInput(SubscribeBody, body, 'body')
    assertTarget(asked.url, this.deps.delivery)
    const webhookId = `whk_${this.deps.random.base62(16)}`
    const state = await this.decide(caller, {
      type: 'Subscribe',
      webhookId,
      ownerId: caller.ownerId,
      actor: caller.keyId,
      at: new Date(this.deps.now()).toISOString(),
      url: asked.url,
      events: asked.events,
      country: asked.country ?? null,
      zone: asked.zone === undefined ? null : zoneNumberOfName(asked.zone),
      thresholdBp: asked.threshold_pct === undefined ? null : thresholdOfPercent(asked.threshold_pct),
    })
    return { webhook: await this.record(state.subscriptions.get(webhookId)!), secret: derivedSecret(signingKey, webhookId) }
  }

  /** GET /webhooks: the owner's subscriptions (deleted ones aside), in the order they were made. */
  async list(caller: Principal): Promise<WebhookRecord[]> {
    const { state } = await loadAggregate(this.deps.store, webhooksStream(caller.ownerId), webhooksDecider)
    const kept = [...state.subscriptions.values()].filter((s) => s.status !== 'deleted')
    return Promise.all(kept.map((s) => this.record(s)))
  }

  /** DELETE /webhooks/{id}: nothing more is sent; the subscription no longer counts toward the limit. */
  async remove(caller: Principal, webhookId: string): Promise<WebhookRecord> {
    const state = await this.decide(caller, { type: 'Unsubscribe', webhookId, ownerId: caller.ownerId, actor: caller.keyId, at: new Date(this.deps.now()).toISOString() })
    return this.record(state.subscriptions.get(webhookId)!)
  }

  /** GET /webhooks/{id}/deliveries: its latest attempts, newest first. */
  async deliveries(caller: Principal, webhookId: string, limit: number): Promise<AttemptRecord[]> {
    await this.own(caller, webhookId)
    const attempts = await this.deps.lines.attempts(webhookId, limit)
    return attempts.map((a) => ({ webhook_id: a.messageId, type: a.type, attempt: a.attempt, at: iso(a.at)!, outcome: a.outcome, status: a.status, ms: a.ms, detail: a.detail }))
  }

  /** POST /webhooks/{id}/ping: one signed `webhook.ping` sent now, outside the line; its outcome is the answer (and an attempt). */
  async ping(caller: Principal, webhookId: string): Promise<AttemptRecord> {
    const signingKey = this.key()
    const subscription = await this.own(caller, webhookId)
    const at = this.deps.now()
    const message = pingMessage(webhookId, this.deps.random.base62(16), new Date(at).toISOString())
    const sent = await sendMessage(subscription.url, message, derivedSecret(signingKey, webhookId), Math.floor(at / 1000), this.deps.delivery)
    const attempt = { webhookId, messageId: message.id, type: message.type, attempt: 1, at, ...sent }
    await this.deps.lines.record(attempt)
    return { webhook_id: message.id, type: message.type, attempt: 1, at: iso(at)!, outcome: sent.outcome, status: sent.status, ms: sent.ms, detail: sent.detail }
  }

  private async record(s: Subscription): Promise<WebhookRecord> {
    return {
      id: s.webhook_id,
      url: s.url,
      events: s.events,
      country: s.country,
      zone: s.zone === null ? null : zoneName(s.zone),
      threshold_pct: s.threshold_bp === null ? null : percentOfThreshold(s.threshold_bp),
      status: s.status,
      disabled_reason: s.disabled_reason,
      created_at: s.at,
      delivery: s.status === 'deleted' ? null : await this.delivery(s.webhook_id),
    }
  }

  private async delivery(webhookId: string): Promise<DeliveryState> {
    const line = await this.deps.lines.line(webhookId)
    if (!line || line.pending.length === 0) return { pending_messages: 0, failing_since: null, next_attempt_at: null }
    return { pending_messages: line.pending.length, failing_since: iso(line.firstFailureAt), next_attempt_at: line.firstFailureAt === null ? null : iso(line.nextAttemptAt) }
  }
}
