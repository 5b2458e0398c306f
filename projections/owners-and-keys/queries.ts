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
  status: string
  issued_by: string
  issued_at: string
  revoked_by: string | null
  revoked_at: string | null
  revoke_reason: string | null
}

/** The keys of `ownerId` in the live generation of `api_keys`, in the order they were issued. */
export async function keysOfOwner(db: Db, ownerId: string): Promise<KeyListing[]> {
  const { tables } = await liveTables(db).of(apiKeysProjection)
  const rows = await db.query<Record<string, unknown>>(
    `select key_id, hint, scopes, label, status, issued_by, issued_at, revoked_by, revoked_at, revoke_reason
       from ${tables.keys} where owner_id = $1 order by issued_at, key_id`,
    [ownerId],
  )
  return rows.map((r) => ({
    ...(r as Omit<KeyListing, 'issued_at' | 'revoked_at'>),
    issued_at: toIso(r.issued_at),
    revoked_at: r.revoked_at == null ? null : toIso(r.revoked_at),
  }))
}
