import type { RecordedEvent } from '../../src/eventstore/port.ts'
import { isKeyEvent } from '../../src/domain/keys/key.ts'
import { type Projection, type RowChange, sql, type Tables } from '../engine/projection.ts'

/**
 * One row per key, looked up by the SHA-256 of the key. Never holds a plaintext key. Version 2 adds
 * rolls: the key a row succeeds, its successor and its grace end (the key expires then, no event).
 */
export const apiKeysProjection: Projection<'keys'> = {
  name: 'api_keys',
  version: 2,
  categories: ['apikey'],
  tables: { keys: 'api_keys' },
  servedCurrentOnly: true,
  schema: (t) => [
    `create table if not exists ${t.keys} (
      key_id text primary key,
      owner_id text not null,
      key_hash text not null unique,
      hint text not null,
      scopes jsonb not null,
      label text,
      status text not null,
      issued_by text not null,
      issued_at timestamptz not null,
      revoked_by text,
      revoked_at timestamptz,
      revoke_reason text,
      rolled_from text,
      successor_key_id text,
      grace_ends_at timestamptz,
      rolled_by text,
      rolled_at timestamptz,
      position bigint not null
    )`,
  ],
  indexes: (t) => [
    `create index if not exists ${t.keys}_owner on ${t.keys} (owner_id, issued_at)`,
    `create index if not exists ${t.keys}_position on ${t.keys} (position)`,
  ],
  apply(event: RecordedEvent, t: Tables<'keys'>): RowChange[] {
    const domain = { type: event.type, data: event.data }
    if (!isKeyEvent(domain)) return []
    switch (domain.type) {
      case 'ApiKeyIssued': {
        const d = domain.data
        return [
          sql(
            `insert into ${t.keys}
               (key_id, owner_id, key_hash, hint, scopes, label, status, issued_by, issued_at, rolled_from, position)
             values ($1, $2, $3, $4, $5::text::jsonb, $6, 'active', $7, $8, $9, $10)`,
            d.key_id,
            d.owner_id,
            d.key_hash,
            d.hint,
            JSON.stringify(d.scopes),
            d.label,
            d.by,
            d.at,
            d.rolled_from ?? null,
            event.position,
          ),
        ]
      }
      case 'ApiKeyRolled': {
        const d = domain.data
        return [
          sql(
            `update ${t.keys}
                set successor_key_id = $2, grace_ends_at = $3, rolled_by = $4, rolled_at = $5, position = $6
              where key_id = $1`,
            d.key_id,
            d.successor_key_id,
            d.grace_ends_at,
            d.by,
            d.at,
            event.position,
          ),
        ]
      }
      case 'ApiKeyRevoked': {
        const d = domain.data
        return [
          sql(
            `update ${t.keys}
                set status = 'revoked', revoked_by = $2, revoked_at = $3, revoke_reason = $4, position = $5
              where key_id = $1`,
            d.key_id,
            d.by,
            d.at,
            d.reason,
            event.position,
          ),
        ]
      }
      default: {
        const never: never = domain
        throw new Error(`unhandled ${JSON.stringify(never)}`)
      }
    }
  },
}
