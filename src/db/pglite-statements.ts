import { parse, type PGlite, protocol } from '@electric-sql/pglite'
import type { Row } from './port.ts'

/*
 * Prepared statements on PGlite, as postgres.js keeps them on PostgreSQL (decision 0120). PGlite's
 * `query` parses and plans its text again at every call, and crosses into WebAssembly six times
 * (parse, describe, bind, describe, execute, sync). Here a text is parsed once per session under a
 * name, and each later call is one crossing: bind, describe, execute, sync in one buffer. An append
 * of 100 events took 47 µs per event instead of 63 (in process; bench/results.md, "Tamper-evident log").
 */

/** A statement prepared in the session: its name and the types of its parameters (to serialise them). */
type Prepared = { name: string; parameterTypes: readonly number[] }

/** Statements kept prepared; the least recently used is closed beyond it (texts built at run time must not grow the session without bound). */
const KEPT = 256

/**
 * A statement that changes tables (not their rows): every statement prepared before it is forgotten
 * after it, or a `select *` of a changed table would fail ("cached plan must not change result type").
 * Every schema change of the project is a create, alter or drop, through `query` or an `exec` script.
 */
const SCHEMA_CHANGE = /^\s*(alter|drop|create)\s/i

const { serialize } = protocol

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const buffer = new Uint8Array(parts.reduce((size, part) => size + part.length, 0))
  let at = 0
  for (const part of parts) {
    buffer.set(part, at)
    at += part.length
  }
  return buffer
}

/**
 * Runs statements through the session's prepared statements. The caller holds PGlite's locks (one
 * statement at a time; a statement outside a transaction waits for the transaction running), as
 * PGlite's own `query` does.
 */
export function preparedStatements(pg: PGlite) {
  const prepared = new Map<string, Prepared>()
  let named = 0
  const send = (...parts: Uint8Array[]) => pg.execProtocolStream(concat(parts), { syncToFs: false })

  /** Closes the least recently used statement. */
  async function forgetOldest(): Promise<void> {
    const [text, statement] = prepared.entries().next().value!
    prepared.delete(text)
    await send(serialize.close({ type: 'S', name: statement.name }), serialize.sync())
  }

  async function prepare(text: string): Promise<Prepared> {
    if (prepared.size >= KEPT) await forgetOldest()
    const name = `mirador_${named++}`
    const messages = await send(serialize.parse({ name, text }), serialize.describe({ type: 'S', name }), serialize.sync())
    const description = messages.find((message) => message.name === 'parameterDescription') as { dataTypeIDs: number[] } | undefined
    const statement = { name, parameterTypes: description?.dataTypeIDs ?? [] }
    prepared.set(text, statement)
    return statement
  }

  /** Finds (and marks as recently used) or prepares the statement of `text`. */
  async function statementOf(text: string): Promise<Prepared> {
    const statement = prepared.get(text)
    if (!statement) return prepare(text)
    prepared.delete(text)
    prepared.set(text, statement)
    return statement
  }

  async function execute<T extends Row>(text: string, params: readonly unknown[]): Promise<T[]> {
    const statement = await statementOf(text)
    // Serialised as PGlite's `query` does: by the parameter's type, else as text.
    const values = params.map((value, i) => {
      if (value === null || value === undefined) return null
      const serializer = pg.serializers[statement.parameterTypes[i]!]
      return serializer ? serializer(value) : String(value)
    })
    const messages = await send(serialize.bind({ statement: statement.name, values }), serialize.describe({ type: 'P' }), serialize.execute({}), serialize.sync())
    return (parse.parseResults(messages, pg.parsers)[0]?.rows ?? []) as T[]
  }

  /** Runs `text` (prepared once); after a schema change, every statement is prepared again. */
  async function run<T extends Row>(text: string, params: readonly unknown[]): Promise<T[]> {
    const rows = await execute<T>(text, params)
    if (SCHEMA_CHANGE.test(text)) await forgetAll()
    return rows
  }

  /** Closes every prepared statement: after a script, which may have changed any table. */
  async function forgetAll(): Promise<void> {
    const names = [...prepared.values()].map((statement) => statement.name)
    prepared.clear()
    if (names.length > 0) await send(...names.map((name) => serialize.close({ type: 'S', name })), serialize.sync())
  }

  return { run, forgetAll }
}
