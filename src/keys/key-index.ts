import type { Db } from '../db/port.ts'
import { toNumber } from '../db/port.ts'
import type { Tier } from '../owners/owner.ts'
import { apiKeysProjection } from '../../projections/api-keys.ts'
import { liveTables } from '../../projections/live.ts'
import { ownersProjection } from '../../projections/owners.ts'
import type { Scope } from './key.ts'

export type IndexedKey = { keyId: string; ownerId: string; scopes: Scope[]; status: 'active' | 'revoked' }
export type IndexedOwner = { tier: Tier; status: 'active' | 'inactive' }

/**
 * In-memory copy of the `api_keys` and `owners` read models, so authentication never queries
 * the database per request. It reloads rows whose position moved: when this process's projection
 * runner applies a batch, and by polling (changes applied by another process). When another
 * generation of either goes live it loads that generation whole and swaps it in at once.
 */
export class KeyIndex {
  private byHash = new Map<string, IndexedKey>()
  private owners = new Map<string, IndexedOwner>()
  private keysSeen = 0
  private ownersSeen = 0
  /** The generations the maps were loaded from (`v1.1/v1.1`). */
  private loadedFrom = ''
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
    const live = liveTables(this.db)
    const [ownersLive, keysLive] = await Promise.all([live.of(ownersProjection), live.of(apiKeysProjection)])
    const from = `${ownersLive.id}/${keysLive.id}`
    const switched = from !== this.loadedFrom
    // Another generation: load it into fresh maps, swapped in only when complete.
    const owners = switched ? new Map<string, IndexedOwner>() : this.owners
    const byHash = switched ? new Map<string, IndexedKey>() : this.byHash
    let ownersSeen = switched ? 0 : this.ownersSeen
    let keysSeen = switched ? 0 : this.keysSeen
    const ownerRows = await this.db.query<{ owner_id: string; tier: Tier; status: 'active' | 'inactive'; position: unknown }>(
      `select owner_id, tier, status, position from ${ownersLive.tables.owners} where position > $1 order by position`,
      [ownersSeen],
    )
    for (const row of ownerRows) {
      owners.set(row.owner_id, { tier: row.tier, status: row.status })
      ownersSeen = Math.max(ownersSeen, toNumber(row.position))
    }
    const keys = await this.db.query<{
      key_id: string
      owner_id: string
      key_hash: string
      scopes: Scope[]
      status: 'active' | 'revoked'
      position: unknown
    }>(
      `select key_id, owner_id, key_hash, scopes, status, position from ${keysLive.tables.keys}
        where position > $1 order by position`,
      [keysSeen],
    )
    for (const row of keys) {
      byHash.set(row.key_hash, { keyId: row.key_id, ownerId: row.owner_id, scopes: row.scopes, status: row.status })
      keysSeen = Math.max(keysSeen, toNumber(row.position))
    }
    this.owners = owners
    this.byHash = byHash
    this.ownersSeen = ownersSeen
    this.keysSeen = keysSeen
    this.loadedFrom = from
  }
}
