import type { Db } from '../db/port.ts'
import { toNumber } from '../db/port.ts'
import type { Tier } from '../owners/owner.ts'
import { API_KEYS_TABLE } from '../../projections/api-keys.ts'
import { OWNERS_TABLE } from '../../projections/owners.ts'
import type { Scope } from './key.ts'

export type IndexedKey = { keyId: string; ownerId: string; scopes: Scope[]; status: 'active' | 'revoked' }
export type IndexedOwner = { tier: Tier; status: 'active' | 'inactive' }

/**
 * In-memory copy of the `api_keys` and `owners` read models, so authentication never queries
 * the database per request. It reloads rows whose position moved: when this process's projection
 * runner applies a batch, and by polling (changes applied by another process).
 */
export class KeyIndex {
  private readonly byHash = new Map<string, IndexedKey>()
  private readonly owners = new Map<string, IndexedOwner>()
  private keysSeen = 0
  private ownersSeen = 0
  private timer: ReturnType<typeof setInterval> | undefined
  private refreshing: Promise<void> | undefined
  private again = false

  constructor(private readonly db: Db) {}

  key(hash: string): IndexedKey | undefined {
    return this.byHash.get(hash)
  }

  owner(ownerId: string): IndexedOwner | undefined {
    return this.owners.get(ownerId)
  }

  /** Loads what changed since the last refresh. Concurrent calls coalesce into one more pass. */
  refresh(): Promise<void> {
    if (this.refreshing) {
      this.again = true
      return this.refreshing
    }
    this.refreshing = (async () => {
      try {
        do {
          this.again = false
          await this.load()
        } while (this.again)
      } finally {
        this.refreshing = undefined
      }
    })()
    return this.refreshing
  }

  startPolling(intervalMs: number, onError: (error: unknown) => void): void {
    this.timer = setInterval(() => this.refresh().catch(onError), intervalMs)
    this.timer.unref?.()
  }

  stop(): void {
    clearInterval(this.timer)
  }

  private async load(): Promise<void> {
    const owners = await this.db.query<{ owner_id: string; tier: Tier; status: 'active' | 'inactive'; position: unknown }>(
      `select owner_id, tier, status, position from ${OWNERS_TABLE} where position > $1 order by position`,
      [this.ownersSeen],
    )
    for (const row of owners) {
      this.owners.set(row.owner_id, { tier: row.tier, status: row.status })
      this.ownersSeen = Math.max(this.ownersSeen, toNumber(row.position))
    }
    const keys = await this.db.query<{
      key_id: string
      owner_id: string
      key_hash: string
      scopes: Scope[]
      status: 'active' | 'revoked'
      position: unknown
    }>(
      `select key_id, owner_id, key_hash, scopes, status, position from ${API_KEYS_TABLE}
        where position > $1 order by position`,
      [this.keysSeen],
    )
    for (const row of keys) {
      this.byHash.set(row.key_hash, { keyId: row.key_id, ownerId: row.owner_id, scopes: row.scopes, status: row.status })
      this.keysSeen = Math.max(this.keysSeen, toNumber(row.position))
    }
  }
}
