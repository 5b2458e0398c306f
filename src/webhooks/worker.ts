import type { ChangeRow } from '../../projections/listings/change-feed.ts'
import type { DeliveryLines, Line, Message } from '../../projections/webhooks/delivery-lines.ts'
import { type DeliverySubscription, subscriptionOf } from '../../projections/webhooks/queries.ts'
import type { Db } from '../db/port.ts'
import { handleCommandRetrying, loadAggregate } from '../eventstore/command-handler.ts'
import type { EventStore } from '../eventstore/port.ts'
import { retryDelayMs, RETRY_FOR_MS } from '../domain/webhooks/retries.ts'
import { webhooksDecider, webhooksStream } from '../domain/webhooks/subscription.ts'
import { type ZoneAlertEvent, zoneAlertDecider, zoneAlertStream } from '../domain/webhooks/zone-alert.ts'
import type { Country } from '../domain/market/vocabulary.ts'
import { zoneSlug } from '../domain/market/zone-name.ts'
import { encodeCursor, storeIdentity } from '../listings/cursor.ts'
import type { ListingFeed } from '../listings/feed-deps.ts'
import type { RandomSource } from '../shared/random.ts'
import { listingMessage, touchedZones, zoneAlertMessage } from './messages.ts'
import type { DeliveryOptions } from './outbound.ts'
import { type Sent, sendMessage } from './sender.ts'
import { derivedSecret } from './signature.ts'

/** What the worker reports: each attempt's outcome, and each delivery's lag from the change's time. */
export type DeliveryReport = { attempted(outcome: Sent['outcome']): void; delivered(lagSeconds: number): void }

export type WorkerDeps = {
  db: Db
  lines: DeliveryLines
  feed: ListingFeed
  store: EventStore
  /** A zone's published median price per m² now, in whole cents (null: it publishes none). */
  zoneFigure(country: Country, zone: number): Promise<number | null>
  signingKey: string
  delivery: DeliveryOptions
  /** Milliseconds since 1970: the processes delivering for one database must agree on it within seconds. */
  now(): number
  random: RandomSource
  /** This process, as lease holder. */
  holder: string
  report: DeliveryReport
  onError(error: unknown): void
}

/** `messagesPerQueue`: messages of consecutive changes queued at once, at most (whole changes; one change may give more). */
export type WorkerSettings = { leaseMs: number; idleMs: number; changesPerRead: number; messagesPerQueue: number }
export const DEFAULT_WORKER_SETTINGS: WorkerSettings = { leaseMs: 30_000, idleMs: 200, changesPerRead: 100, messagesPerQueue: 10 }

/**
 * The delivery worker (decision 0112): in a loop, takes the lease of one subscription with work,
 * sends its messages in order — the first pending one until it is delivered, nothing after it
 * before — and lets go. While it holds the lease it works at most half the lease; each write of the
 * line extends the lease, and it is renewed before a message when less than half of it is left, so
 * a message is only sent with most of a lease ahead, and a process that is killed or frozen loses
 * the line to another within a lease. A message is queued (written with the line) before it is first sent: whoever sends it
 * next sends the same bytes under the same `webhook-id`.
 */
export class DeliveryWorker {
  private running = false
  /** Set by `stop`: a round in progress ends its line after the message in flight. */
  private stopping = false
  private stopped: Promise<void> = Promise.resolve()
  private wake: (() => void) | null = null

  constructor(
    private readonly deps: WorkerDeps,
    private readonly settings: WorkerSettings = DEFAULT_WORKER_SETTINGS,
  ) {}

  start(): void {
    if (this.running) return
    this.running = true
    this.stopped = this.loop()
  }

  async stop(): Promise<void> {
    this.running = false
    this.stopping = true
    this.wake?.()
    await this.stopped
  }

  /** One round: open lines for new subscriptions, then work one line; false when there was nothing to do. */
  async round(): Promise<boolean> {
    const { lines, feed, holder } = this.deps
    const now = this.deps.now()
    await lines.open(now)
    const view = await feed.changes.view()
    const line = await lines.claim(holder, now, this.settings.leaseMs, view.position)
    if (!line) return false
    try {
      await this.work(line, now + this.settings.leaseMs / 2, { until: now + this.settings.leaseMs })
    } finally {
      await lines.release(holder, line.webhookId)
    }
    return true
  }

  private async loop(): Promise<void> {
    while (this.running) {
      let busy = false
      try {
        busy = await this.round()
      } catch (error) {
        this.deps.onError(error)
      }
      if (!busy && this.running) await new Promise<void>((resolve) => {
        this.wake = resolve
        setTimeout(resolve, this.settings.idleMs)
      })
    }
  }

  /** Works the claimed line until `until`; `lease.until`: when the lease ends as last written. */
  private async work(claimed: Line, until: number, lease: { until: number }): Promise<void> {
    const subscription = await subscriptionOf(this.deps.db, claimed.webhookId)
    if (!subscription || subscription.status !== 'active') return
    let line: Line | null = claimed
    while (line && !this.stopping && this.deps.now() < until) {
      if (line.pending.length === 0) line = await this.queueNext(line, subscription, lease)
      else if (await this.leaseAhead(line.webhookId, lease)) line = await this.sendFirst(line, subscription, lease)
      else line = null
    }
  }

  /** Whether the lease is held with at least half of it ahead, renewed when less is left; false when it was lost. */
  private async leaseAhead(webhookId: string, lease: { until: number }): Promise<boolean> {
    const now = this.deps.now()
    if (lease.until - now >= this.settings.leaseMs / 2) return true
    if (!(await this.deps.lines.renew(this.deps.holder, webhookId, now + this.settings.leaseMs))) return false
    lease.until = now + this.settings.leaseMs
    return true
  }

  /**
   * Reads the changes after the cursor and queues the messages of the first ones that give any (whole
   * changes, up to `messagesPerQueue` messages), or, when none is left, moves the cursor past them.
   * Queuing several changes at once spares a read and a write of the line per change: at 100 changes
   * a second one at a time, those were most of the worker's time (bench/results.md, "Webhook delivery lag").
   */
  private async queueNext(line: Line, subscription: DeliverySubscription, lease: { until: number }): Promise<Line | null> {
    const { feed, lines, holder } = this.deps
    const view = await feed.changes.view()
    const filter = { country: subscription.country, zone: subscription.zone }
    const rows = await feed.changes.page(view, line.cursor, this.settings.changesPerRead, filter)
    const messages: Message[] = []
    let through: number | null = null
    for (const row of rows) {
      const more = await this.messagesOf(subscription, row)
      if (more.length === 0) continue
      messages.push(...more)
      through = row.position
      if (messages.length >= this.settings.messagesPerQueue) break
    }
    if (through !== null) {
      const now = this.deps.now()
      const queued = await lines.queue(holder, line.webhookId, through, messages, now, now + this.settings.leaseMs)
      if (!queued) return null
      lease.until = now + this.settings.leaseMs
      return { ...line, pending: messages, pendingPosition: through, attempts: 0, firstFailureAt: null }
    }
    const end = rows.length < this.settings.changesPerRead ? view.position : rows.at(-1)!.position
    if (end <= line.cursor) return null
    const skipped = await lines.skipTo(holder, line.webhookId, end)
    return skipped && rows.length === this.settings.changesPerRead ? { ...line, cursor: end } : null
  }

  /** The messages a change gives a subscription: its listing change, then its zone alerts, as subscribed. */
  private async messagesOf(subscription: DeliverySubscription, row: ChangeRow): Promise<Message[]> {
    const filter = { country: subscription.country, zone: subscription.zone }
    const cursor = encodeCursor(await storeIdentity(this.deps.feed.store), row.position)
    const messages: Message[] = []
    const listing = listingMessage(subscription.webhookId, row, cursor, filter, subscription.events, 0)
    if (listing) messages.push(listing)
    if (subscription.events.includes('zone.statistics_changed') && subscription.country !== null && subscription.thresholdBp !== null) {
      for (const { country, zone } of touchedZones(row)) {
        const alert = await this.zoneAlert(subscription, country, zone, row.position)
        if (alert) messages.push(zoneAlertMessage(subscription.webhookId, row.position, alert, messages.length))
      }
    }
    return messages
  }

  /**
   * The zone alert the change at `position` gives, decided once: the decision is recorded on the
   * subscription's alert stream with the position, so a worker that restarts before queueing it finds
   * it there and sends the same alert, instead of deciding again against a reference it already moved.
   */
  private async zoneAlert(subscription: DeliverySubscription, country: Country, zone: number, position: number): Promise<ZoneAlertEvent | null> {
    const stream = zoneAlertStream(subscription.webhookId)
    const { events } = await loadAggregate(this.deps.store, stream, zoneAlertDecider)
    const decided = events
      .map((e) => e.data as ZoneAlertEvent['data'])
      .find((d) => d.position === position && d.country === country && d.slug === zoneSlug(zone))
    if (decided) return { type: 'ZoneAlertSent', data: decided }
    const figure = await this.deps.zoneFigure(country, zone)
    const command = {
      type: 'NoteZoneFigure' as const,
      subscription: { id: subscription.webhookId, country: subscription.country!, zone: subscription.zone, thresholdBp: subscription.thresholdBp! },
      country,
      zone,
      medianPpm2Cents: figure,
      at: new Date(this.deps.now()).toISOString(),
      position,
    }
    const { events: recorded } = await handleCommandRetrying(this.deps.store, stream, zoneAlertDecider, (state) => zoneAlertDecider.decide(command, state), () => this.deps.random.uuid())
    return recorded[0] ?? null
  }

  /** Sends the first pending message once; delivered → the line moves on, otherwise it waits its back-off (or is disabled after a day). */
  private async sendFirst(line: Line, subscription: DeliverySubscription, lease: { until: number }): Promise<Line | null> {
    const { lines, holder, now } = this.deps
    const message = line.pending[0]!
    const secret = derivedSecret(this.deps.signingKey, line.webhookId)
    const sent = await sendMessage(subscription.url, message, secret, Math.floor(now() / 1000), this.deps.delivery)
    const at = now()
    const attempt = { webhookId: line.webhookId, messageId: message.id, type: message.type, attempt: line.attempts + 1, at, ...sent }
    this.deps.report.attempted(sent.outcome)
    if (sent.outcome === 'delivered') {
      const timestamp = Date.parse((JSON.parse(message.body) as { timestamp: string }).timestamp)
      if (Number.isFinite(timestamp)) this.deps.report.delivered(Math.max(0, (at - timestamp) / 1000))
      const next = await lines.delivered(holder, line, attempt, at + this.settings.leaseMs)
      if (next) lease.until = at + this.settings.leaseMs
      return next
    }
    await lines.record(attempt)
    const firstFailureAt = line.firstFailureAt ?? at
    if (at - firstFailureAt >= RETRY_FOR_MS) {
      await this.disable(subscription, `deliveries failed for 24 hours; the last attempt: ${sent.outcome}${sent.status === null ? '' : ` ${sent.status}`}${sent.detail ? `, ${sent.detail.slice(0, 200)}` : ''}`)
      return null
    }
    await lines.failed(holder, line, firstFailureAt, at + retryDelayMs(line.attempts + 1))
    return null
  }

  private async disable(subscription: DeliverySubscription, reason: string): Promise<void> {
    const command = { type: 'Disable' as const, webhookId: subscription.webhookId, ownerId: subscription.ownerId, reason, at: new Date(this.deps.now()).toISOString() }
    await handleCommandRetrying(this.deps.store, webhooksStream(subscription.ownerId), webhooksDecider, (state) => webhooksDecider.decide(command, state), () => this.deps.random.uuid())
  }
}
