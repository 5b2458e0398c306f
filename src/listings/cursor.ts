import { createHash } from 'node:crypto'
import type { EventStore } from '../eventstore/port.ts'
import { fail } from '../shared/errors.ts'

/**
 * Cursors of the change feed (decision 0111): a position in the event store's log, with the
 * identity of the store it belongs to, as opaque text: `c1.` and the base64url of `<store>.<position>`.
 * Positions are the log's, not a read model's, so a cursor means the same in every process, after a
 * restart and after a rebuild. The store's identity is derived from the id of the first event ever
 * recorded (kept by `events export`/`import`), so it needs no event of its own; position 0 (the
 * beginning, before any event) belongs to every store.
 */
const VERSION = 'c1.'

export const encodeCursor = (store: string, position: number): string =>
  VERSION + Buffer.from(`${position === 0 ? '' : store}.${position}`).toString('base64url')

const CURSOR_TEXT = /^([0-9a-f]{16})?\.(0|[1-9][0-9]{0,15})$/

/** What a cursor's text says: its store and position; null for text that is not a cursor (the check of `after` in the query). */
function parsed(text: string): { store: string; position: number } | null {
  const body = text.startsWith(VERSION) ? text.slice(VERSION.length) : ''
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(body)) return null
  const decoded = Buffer.from(body, 'base64url').toString()
  const match = CURSOR_TEXT.exec(decoded)
  // One text per cursor: base64url that decodes to the same bytes another way is not one.
  if (!match || Buffer.from(decoded).toString('base64url') !== body) return null
  const position = Number(match[2])
  return Number.isSafeInteger(position) ? { store: match[1] ?? '', position } : null
}

/** Why `text` is not a cursor, for a 400 invalid_request naming `after`; null when it is one. */
export const cursorTextError = (text: string): string | null =>
  parsed(text) ? null : 'Expected a cursor exactly as an answer gave it (`cursor`, `next_cursor` or an export\'s Mirador-Cursor)'

/** The position of a cursor of store `store`; invalid_cursor (naming `field`) for a cursor of another store. */
export function decodeCursor(text: string, store: string, field = 'after'): number {
  const cursor = parsed(text)
  if (!cursor) throw fail.invalidCursor(field, 'not a cursor: pass a `cursor` or `next_cursor` exactly as an answer gave it')
  if (cursor.position === 0) return 0
  if (cursor.store !== store) throw fail.invalidCursor(field, 'a cursor of another Mirador store: start again from a new export')
  return cursor.position
}

/** The cursor error for a position this store has not reached (a forged or foreign cursor). */
export const cursorAhead = (field = 'after') => fail.invalidCursor(field, 'after the latest change of this store: pass a cursor an answer gave')

const identities = new WeakMap<object, string>()

/** The identity of the store: 16 hex digits of the SHA-256 of its first event's id ('' while it holds no event). */
export async function storeIdentity(store: Pick<EventStore, 'readAll'>): Promise<string> {
  const known = identities.get(store)
  if (known !== undefined) return known
  const [first] = await store.readAll(0, { limit: 1 })
  if (!first) return ''
  const identity = createHash('sha256').update(first.id.toLowerCase()).digest('hex').slice(0, 16)
  identities.set(store, identity)
  return identity
}
