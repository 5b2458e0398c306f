import type { RecordedEvent } from '../src/eventstore/port.ts'

/** One parameterised SQL statement: what a projection asks the runner to execute. */
export type RowChange = { text: string; params: readonly unknown[] }

/**
 * A read model. `apply` is pure: the same event always yields the same row changes, using
 * only event data (never the wall clock), so replaying from zero reproduces identical rows.
 *
 * Tables carry the version in their name (e.g. `api_keys_v1`). Bumping `version` builds new
 * tables beside the old ones from position 0; readers switch when the new version is caught up.
 */
export interface Projection {
  readonly name: string
  readonly version: number
  /** Stream categories this projection reads; others are never fetched. */
  readonly categories: readonly string[]
  /** Idempotent DDL (`create table if not exists …`), run before the first event. */
  readonly schema: readonly string[]
  /** Tables to drop on rebuild. */
  readonly tables: readonly string[]
  apply(event: RecordedEvent): readonly RowChange[]
  /**
   * Optional, also pure: the row changes of consecutive events at once, with the same effect as
   * `apply` on each in order, in fewer statements (e.g. one multi-row statement per kind of change).
   * The runner uses it for every batch when present.
   */
  applyBatch?(events: readonly RecordedEvent[]): readonly RowChange[]
}

export const sql = (text: string, ...params: unknown[]): RowChange => ({ text, params })
