import type { Db } from '../../src/db/port.ts'
import { toIso } from '../../src/db/port.ts'
import type { Scope } from '../../src/domain/keys/key.ts'
import type { Tier } from '../../src/domain/owners/owner.ts'
import type { Follower, LiveAdvancing } from '../engine/follow.ts'
import { followRows, type Rows, type RowsRead } from '../engine/follow-rows.ts'
import type { LiveTables } from '../engine/live-tables.ts'
import { apiKeysProjection } from './api-keys.ts'
import { ownersProjection } from './owners.ts'

/** `expiresAt`: the grace end of a rolled key, in milliseconds (null: never rolled); checked against the time of each request. */
export type IndexedKey = { keyId: string; ownerId: string; scopes: Scope[]; status: 'active' | 'revoked'; expiresAt: number | null }
export type IndexedOwner = { tier: Tier; status: 'active' | 'inactive' }

type OwnerRow = { owner_id: string; tier: Tier; status: 'active' | 'inactive'; position: unknown }
type KeyRow = {
  key_id: string
  owner_id: string
  key_hash: string
  scopes: Scope[]
  status: 'active' | 'revoked'
  grace_ends_at: unknown
  position: unknown
}

/**
 * In-memory copy of the `owners` and `api_keys` read models, so authentication never queries the
 * database per request. Each follows its live generation (see followLive): the rows a batch changed
 * are read again when any process applies it, and a promoted or rolled back generation is loaded
 * whole and swapped in at once (until then the previous one answers).
 */
export class KeyIndex {
  private constructor(
    private readonly owners: Follower<Rows<IndexedOwner>>,
    private readonly keys: Follower<Rows<IndexedKey>>,
  ) {}

  static follow(db: Db, sources: { live: LiveTables; advancing: LiveAdvancing }, onError: (error: unknown) => void): KeyIndex {
    const follow = <R extends { position: unknown }, V, K extends string>(read: RowsRead<R, V, K>) => followRows(db, sources, read, onError)
    return new KeyIndex(
      follow<OwnerRow, IndexedOwner, 'owners'>({
        projection: ownersProjection,
        table: 'owners',
        columns: 'owner_id, tier, status',
        id: (row) => row.owner_id,
        value: (row) => ({ tier: row.tier, status: row.status }),
      }),
      follow<KeyRow, IndexedKey, 'keys'>({
        projection: apiKeysProjection,
        table: 'keys',
        columns: 'key_id, owner_id, key_hash, scopes, status, grace_ends_at',
        id: (row) => row.key_hash,
        value: (row) => ({
          keyId: row.key_id,
          ownerId: row.owner_id,
          scopes: row.scopes,
          status: row.status,
          expiresAt: row.grace_ends_at == null ? null : Date.parse(toIso(row.grace_ends_at)),
        }),
      }),
    )
  }

  key(hash: string): IndexedKey | undefined {
    return this.keys.latest()?.byId.get(hash)
  }

  owner(ownerId: string): IndexedOwner | undefined {
    return this.owners.latest()?.byId.get(ownerId)
  }

  /** Settles when both copies hold everything they were told of (and the first loads are done). */
  async settled(): Promise<void> {
    await Promise.all([this.owners.settled(), this.keys.settled()])
  }

  stop(): void {
    this.owners.stop()
    this.keys.stop()
  }
}
