import type { Db } from '../db/port.ts'
import type { Subscription } from './port.ts'

/** What the SQL event store's reads, appends and subscriptions share (src/eventstore/sql-event-store.ts). */
export type SqlLog = {
  db: Db
  /** Each live subscription's wake-up, with the categories it reads (none: all). */
  wakers: Set<Waker>
  /** The live subscriptions, stopped when the store closes. */
  subscriptions: Set<Subscription>
  /** How long a live subscription with nothing to read waits when no append wakes it (`pollInterval`). */
  pollMs: number
}

/**
 * A live subscription reads again after this long even when no append woke it. On PostgreSQL other
 * processes append too (the CLI, other servers): their notifications can be missed while a connection
 * is lost, so it reads four times a second. The embedded store has one process, which holds its data
 * directory's lock: every append passes through this log and wakes its readers once committed, so
 * the read is only a safety net. Four reads a second for each of ~9 subscriptions were 55 ms of CPU a
 * second of an idle embedded server, on the thread that answers requests (decision 0122).
 */
export const pollInterval = (db: Db): number => (db.kind === 'pglite' ? 5000 : 250)

export type Waker = { categories: readonly string[] | undefined; wake(): void }

/** Wakes subscriptions on appends to their categories, in this process and (through it) the others. */
export const NOTIFY_CHANNEL = 'mirador_events'
/** Arbitrary constant naming the advisory lock that serialises appends (see docs/decisions.md, Event store). */
export const APPEND_LOCK = 727_001
/**
 * Takes the append lock of the events table in use: advisory locks are the database's, so keyed by
 * the schema too, or every stack sharing the database (one per schema) would wait for the others' appends.
 *
 * It also runs the transaction's statements on generic plans, planned once per connection. The
 * connections plan every execution for its values (`force_custom_plan`, src/db/postgres.ts), which the
 * read models' skewed searches need; the append statements' plans never depend on their values, and
 * planning the chained insert again at each append cost a single-event append about a fifth of its
 * time on PostgreSQL (decision 0120; the projections' batches do the same, decision 0076).
 */
export const LOCK_APPENDS = `select pg_advisory_xact_lock($1, hashtext(current_schema())), set_config('plan_cache_mode', 'force_generic_plan', true)`

/**
 * Wakes the subscriptions that read one of `categories` (the payload of a notification: those of
 * the events appended); the others would only read nothing. An empty list wakes them all.
 */
export function wakeReaders(wakers: ReadonlySet<Waker>, categories: readonly string[]): void {
  for (const waker of wakers) {
    if (categories.length === 0 || !waker.categories || waker.categories.some((c) => categories.includes(c))) waker.wake()
  }
}
