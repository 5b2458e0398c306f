import type { Db } from '../../src/db/port.ts'
import { toIso } from '../../src/db/port.ts'
import { liveTables } from '../engine/live-tables.ts'
import { apiKeysProjection } from './api-keys.ts'

/** A key as `key list` shows it: never the key itself, only its hint. */
export type KeyListing = {
  key_id: string
  hint: string
  scopes: string[]
  label: string | null
  /** As recorded: `active` or `revoked` (a rolled key stays `active` until its grace ends, with no event then). */
  status: 'active' | 'revoked'
  issued_by: string
  issued_at: string
  revoked_by: string | null
  revoked_at: string | null
  revoke_reason: string | null
  /** The key it succeeds; once rolled, its successor and the end of its grace. */
  rolled_from: string | null
  successor_key_id: string | null
  grace_ends_at: string | null
}

const isoOrNull = (value: unknown) => (value == null ? null : toIso(value))

/** The keys of `ownerId` in the live generation of `api_keys`, in the order they were issued. */
export async function keysOfOwner(db: Db, ownerId: string): Promise<KeyListing[]> {
  const { tables } = await liveTables(db).of(apiKeysProjection)
  const rows = await db.query<Record<string, unknown>>(
    `select key_id, hint, scopes, label, status, issued_by, issued_at, revoked_by, revoked_at, revoke_reason,
            rolled_from, successor_key_id, grace_ends_at
       from ${tables.keys} where owner_id = $1 order by issued_at, key_id`,
    [ownerId],
  )
  return rows.map((r) => ({
    ...(r as Omit<KeyListing, 'issued_at' | 'revoked_at' | 'grace_ends_at'>),
    issued_at: toIso(r.issued_at),
    revoked_at: isoOrNull(r.revoked_at),
    grace_ends_at: isoOrNull(r.grace_ends_at),
  }))
}
