import type { Db } from '../../src/db/port.ts'
import { toIso, toNumber } from '../../src/db/port.ts'
import { liveTables } from '../engine/live-tables.ts'
import { webhooksProjection } from './subscriptions.ts'

/**
 * Delivery state (decision 0112): operational, not a read model, so it is not rebuilt from events
 * and survives rebuilds of the subscriptions table. One line per subscription: its cursor in the
 * change feed (every change up to it delivered), the messages of the next changes still to send
 * (`pending`, sent first to last), the failures of the first of them, and a lease: the process that
 * holds an unexpired lease is the only one sending for that subscription. Every write after the
 * claim is conditional on still holding the lease, so a process that lost it (it paused past the
 * lease, another took over) changes nothing. Times are the processes' clock in milliseconds.
 *
 * Beside it, the attempts: one row per request tried (or refused before sending), kept 7 days, for
 * GET /webhooks/{id}/deliveries.
 */

export const LINES = 'webhook_lines'
export const ATTEMPTS = 'webhook_attempts'

/** One message of a subscription's line: what is signed and sent, byte for byte the same on each retry. */
export type Message = { id: string; type: string; body: string }

export type Line = {
  webhookId: string
  cursor: number
  pending: Message[]
  /** The log position of the last change the pending messages are of (null: none pending): the cursor once they are delivered. */
  pendingPosition: number | null
  attempts: number
  firstFailureAt: number | null
}

export type AttemptOutcome = 'delivered' | 'rejected' | 'redirected' | 'refused' | 'unreachable' | 'timeout'

export type Attempt = {
  webhookId: string
  messageId: string
  type: string
  attempt: number
  at: number
  outcome: AttemptOutcome
  status: number | null
  ms: number | null
  detail: string | null
}

/** How long attempts are kept. */
export const ATTEMPTS_KEPT_MS = 7 * 24 * 3600_000

const SCHEMA = [
  `create table if not exists ${LINES} (
    webhook_id text primary key,
    cursor bigint not null,
    pending jsonb,
    pending_position bigint,
    attempts integer not null default 0,
    first_failure_at bigint,
    next_attempt_at bigint not null,
    lease_holder text,
    lease_until bigint
  )`,
  `create table if not exists ${ATTEMPTS} (
    seq bigserial primary key,
    webhook_id text not null,
    message_id text not null,
    type text not null,
    attempt integer not null,
    attempted_at bigint not null,
    outcome text not null,
    status integer,
    ms integer,
    detail text
  )`,
  `create index if not exists ${ATTEMPTS}_webhook on ${ATTEMPTS} (webhook_id, seq desc)`,
]

const lineOf = (r: Record<string, unknown>): Line => ({
  webhookId: r.webhook_id as string,
  cursor: toNumber(r.cursor),
  pending: r.pending == null ? [] : ((typeof r.pending === 'string' ? JSON.parse(r.pending) : r.pending) as Message[]),
  pendingPosition: r.pending_position == null ? null : toNumber(r.pending_position),
  attempts: Number(r.attempts),
  firstFailureAt: r.first_failure_at == null ? null : toNumber(r.first_failure_at),
})

/** The delivery tables of a read-model database, created on first use. */
export class DeliveryLines {
  private ready: Promise<void> | null = null

  constructor(private readonly db: Db) {}

  private prepared(): Promise<void> {
    this.ready ??= (async () => {
      for (const ddl of SCHEMA) await this.db.exec(ddl)
    })().catch((error) => {
      this.ready = null
      throw error
    })
    return this.ready
  }

  private async subscriptions(): Promise<string> {
    return (await liveTables(this.db).of(webhooksProjection)).tables.webhooks
  }

  /** A line for every active subscription without one, starting after the position it subscribed at. */
  async open(now: number): Promise<void> {
    await this.prepared()
    const t = await this.subscriptions()
    await this.db.query(
      `insert into ${LINES} (webhook_id, cursor, next_attempt_at)
       select webhook_id, subscribed_position, $1 from ${t} where status = 'active'
       on conflict (webhook_id) do nothing`,
      [now],
    )
  }

  /**
   * Takes the lease of one active subscription with work to do (a message due, or changes after its
   * cursor up to `feedPosition`) that no process holds, for `leaseMs`; null when there is none.
   * The update re-checks the lease, so of two processes racing for a line one gets it.
   */
  async claim(holder: string, now: number, leaseMs: number, feedPosition: number): Promise<Line | null> {
    await this.prepared()
    const t = await this.subscriptions()
    const free = '(lease_until is null or lease_until < $2)'
    const [row] = await this.db.query(
      `update ${LINES} set lease_holder = $1, lease_until = $3
        where webhook_id = (
          select l.webhook_id from ${LINES} l join ${t} w on w.webhook_id = l.webhook_id
           where w.status = 'active' and ${free.replaceAll('lease_', 'l.lease_')}
             and ((l.pending is not null and l.next_attempt_at <= $2) or (l.pending is null and l.cursor < $4))
           order by l.next_attempt_at limit 1
        ) and ${free}
        returning *`,
      [holder, now, now + leaseMs, feedPosition],
    )
    return row ? lineOf(row) : null
  }

  /** Extends the lease; false when it was lost (the caller stops working on the line). */
  async renew(holder: string, webhookId: string, until: number): Promise<boolean> {
    const rows = await this.db.query(`update ${LINES} set lease_until = $3 where webhook_id = $1 and lease_holder = $2 returning 1`, [webhookId, holder, until])
    return rows.length > 0
  }

  async release(holder: string, webhookId: string): Promise<void> {
    await this.db.query(`update ${LINES} set lease_holder = null, lease_until = null where webhook_id = $1 and lease_holder = $2`, [webhookId, holder])
  }

  /** Nothing to send up to `position`: the cursor moves there. */
  async skipTo(holder: string, webhookId: string, position: number): Promise<boolean> {
    return this.changed(`update ${LINES} set cursor = greatest(cursor, $3) where webhook_id = $1 and lease_holder = $2 and pending is null returning 1`, [webhookId, holder, position])
  }

  /** The messages of the next changes, the last at `position`, to be sent in order before anything after it; the lease is held until `leaseUntil`. */
  async queue(holder: string, webhookId: string, position: number, messages: readonly Message[], now: number, leaseUntil: number): Promise<boolean> {
    return this.changed(
      `update ${LINES} set pending = $3::text::jsonb, pending_position = $4, attempts = 0, first_failure_at = null, next_attempt_at = $5, lease_until = $6
        where webhook_id = $1 and lease_holder = $2 and pending is null returning 1`,
      [webhookId, holder, JSON.stringify(messages), position, now, leaseUntil],
    )
  }

  /**
   * The first pending message was delivered (`attempt` says how): the attempt is recorded and the
   * line moves on in one statement, one round trip; the next message is due now, and after the last
   * the cursor moves to their change. The lease is held until `leaseUntil`. The attempt is recorded
   * even if the lease was lost meanwhile (it happened); the line then is not changed.
   */
  async delivered(holder: string, line: Line, attempt: Attempt, leaseUntil: number): Promise<Line | null> {
    await this.prepared()
    const rest = line.pending.slice(1)
    const cursor = rest.length === 0 ? line.pendingPosition! : line.cursor
    const ok = await this.changed(
      `with attempt as (
         insert into ${ATTEMPTS} (webhook_id, message_id, type, attempt, attempted_at, outcome, status, ms, detail) values ($1, $8, $9, $10, $6, $11, $12, $13, $14)
       )
       update ${LINES} set pending = $3::text::jsonb, pending_position = $4, cursor = $5, attempts = 0, first_failure_at = null, next_attempt_at = $6, lease_until = $7
        where webhook_id = $1 and lease_holder = $2 returning 1`,
      [
        line.webhookId, holder, rest.length === 0 ? null : JSON.stringify(rest), rest.length === 0 ? null : line.pendingPosition, cursor, attempt.at, leaseUntil,
        attempt.messageId, attempt.type, attempt.attempt, attempt.outcome, attempt.status, attempt.ms, attempt.detail,
      ],
    )
    return ok ? { ...line, cursor, pending: rest, pendingPosition: rest.length === 0 ? null : line.pendingPosition, attempts: 0, firstFailureAt: null } : null
  }

  /** The first pending message failed: tried again at `nextAt`. */
  async failed(holder: string, line: Line, firstFailureAt: number, nextAt: number): Promise<boolean> {
    return this.changed(
      `update ${LINES} set attempts = attempts + 1, first_failure_at = $3, next_attempt_at = $4 where webhook_id = $1 and lease_holder = $2 returning 1`,
      [line.webhookId, holder, firstFailureAt, nextAt],
    )
  }

  async record(attempt: Attempt): Promise<void> {
    await this.prepared()
    await this.db.query(
      `insert into ${ATTEMPTS} (webhook_id, message_id, type, attempt, attempted_at, outcome, status, ms, detail) values ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      [attempt.webhookId, attempt.messageId, attempt.type, attempt.attempt, attempt.at, attempt.outcome, attempt.status, attempt.ms, attempt.detail],
    )
  }

  /** The latest attempts of a subscription, newest first, at most `limit`. */
  async attempts(webhookId: string, limit: number): Promise<Attempt[]> {
    await this.prepared()
    const rows = await this.db.query(
      `select webhook_id, message_id, type, attempt, attempted_at, outcome, status, ms, detail from ${ATTEMPTS} where webhook_id = $1 order by seq desc limit $2`,
      [webhookId, limit],
    )
    return rows.map((r) => ({
      webhookId: r.webhook_id as string,
      messageId: r.message_id as string,
      type: r.type as string,
      attempt: Number(r.attempt),
      at: toNumber(r.attempted_at),
      outcome: r.outcome as AttemptOutcome,
      status: r.status == null ? null : Number(r.status),
      ms: r.ms == null ? null : Number(r.ms),
      detail: (r.detail as string | null) ?? null,
    }))
  }

  /** The line of a subscription as it stands (for GET /webhooks and the specs), or null before the worker opened it. */
  async line(webhookId: string): Promise<(Line & { nextAttemptAt: number }) | null> {
    await this.prepared()
    const [row] = await this.db.query(`select * from ${LINES} where webhook_id = $1`, [webhookId])
    return row ? { ...lineOf(row), nextAttemptAt: toNumber(row.next_attempt_at) } : null
  }

  /** Active subscriptions with messages waiting, and since when the oldest has been failing (/health, metrics). */
  async backlog(): Promise<{ waiting: number; oldestFailureAt: string | null }> {
    await this.prepared()
    const t = await this.subscriptions()
    const [row] = await this.db.query(
      `select count(*) as waiting, min(l.first_failure_at) as oldest from ${LINES} l join ${t} w on w.webhook_id = l.webhook_id
        where w.status = 'active' and l.pending is not null`,
    )
    return { waiting: Number(row?.waiting ?? 0), oldestFailureAt: row?.oldest == null ? null : toIso(new Date(toNumber(row.oldest))) }
  }

  /** Attempts older than `ATTEMPTS_KEPT_MS` go. */
  async prune(now: number): Promise<void> {
    await this.prepared()
    await this.db.query(`delete from ${ATTEMPTS} where attempted_at < $1`, [now - ATTEMPTS_KEPT_MS])
  }

  private async changed(text: string, params: unknown[]): Promise<boolean> {
    return (await this.db.query(text, params)).length > 0
  }
}
