/**
 * The SQL port shared by the event store and the read models. Both adapters speak PostgreSQL
 * (PGlite is PostgreSQL compiled to WASM), so every statement in the project is written once.
 */
export type Row = Record<string, unknown>

export interface Sql {
  query<T extends Row = Row>(text: string, params?: readonly unknown[]): Promise<T[]>
}

export interface Db extends Sql {
  readonly kind: 'pglite' | 'postgres'
  /** Runs a multi-statement script (DDL) without parameters. */
  exec(script: string): Promise<void>
  /** Runs `work` in one transaction; a thrown error rolls it back. */
  transaction<R>(work: (tx: Sql) => Promise<R>): Promise<R>
  /** LISTEN on `channel`; returns the function that stops listening. */
  listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>>
  close(): Promise<void>
}

/** postgres.js returns int8 as text, PGlite as number: normalise at the edge of every read. */
export const toNumber = (value: unknown): number => (typeof value === 'number' ? value : Number(value))

export const toIso = (value: unknown): string =>
  value instanceof Date ? value.toISOString() : new Date(String(value)).toISOString()
