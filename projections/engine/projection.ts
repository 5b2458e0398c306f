import type { RecordedEvent } from '../../src/eventstore/port.ts'

/** One parameterised SQL statement: what a projection asks the runner to execute. */
export type RowChange = { text: string; params: readonly unknown[] }

/** The actual names of one generation's tables, under the projection's own keys. */
export type Tables<K extends string = string> = Readonly<Record<K, string>>

/**
 * A read model. `apply` is pure: the same event always yields the same row changes, using
 * only event data (never the wall clock), so replaying from zero reproduces identical rows.
 *
 * Its tables belong to a generation (version + build, see generations.ts): `tables` gives their
 * base names, and every function receives the generation's actual names, so a new generation is
 * built from position 0 into its own tables while readers keep using the live one.
 */
export interface Projection<K extends string = string> {
  /** The one name operators, status and the registry use (`listings`, `api_keys`, …). */
  readonly name: string
  /** Bump it when what the projection computes changes: a new generation is built and promoted. */
  readonly version: number
  /** Stream categories this projection reads; others are never fetched. */
  readonly categories: readonly string[]
  /** Base names of its tables, by key (a generation's table is `<base>_<suffix>`). */
  readonly tables: Readonly<Record<K, string>>
  /**
   * True when the API must never serve a generation this code cannot keep current (authentication:
   * a revocation has to count at once). On a version bump the server then builds it before serving
   * (such projections are small); others are served from the old generation while the new one builds.
   */
  readonly servedCurrentOnly?: boolean
  /** Idempotent DDL of its tables (`create table if not exists …`, with primary keys), run before the first event. */
  schema(t: Tables<K>): readonly string[]
  /** Idempotent secondary indexes: created at once for a fresh store, after the bulk of a build otherwise. */
  indexes(t: Tables<K>): readonly string[]
  apply(event: RecordedEvent, t: Tables<K>): readonly RowChange[]
  /**
   * Optional, also pure: the row changes of consecutive events at once, with the same effect as
   * `apply` on each in order, in fewer statements (e.g. one multi-row statement per kind of change).
   * The runner uses it for every batch when present.
   */
  applyBatch?(events: readonly RecordedEvent[], t: Tables<K>): readonly RowChange[]
}

export const sql = (text: string, ...params: unknown[]): RowChange => ({ text, params })
