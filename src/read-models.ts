/**
 * The read models this process keeps in memory for the API, each loaded (or its loading begun)
 * before the server answers, then kept current by following the projection runner and every
 * generation switch.
 */
import { monthResetsAt, type QuotaPolicy, quotaMonth, usageOf } from './domain/briefings/quota.ts'
import type { LoadingInMemory } from './health-monitor.ts'
import type { QuotaReader } from './health/routes.ts'
import type { Storage } from './storage.ts'
import { UsageIndex } from '../projections/briefings/usage-index.ts'
import { liveTables } from '../projections/engine/live-tables.ts'
import { ListingInventory } from '../projections/listings/inventory.ts'
import { ReadyZones } from '../projections/listings/ready-zones.ts'
import { KeyIndex } from '../projections/owners-and-keys/key-index.ts'

/** Authentication's copy of the owners and keys read models, loaded before it answers. */
export async function openKeyIndex(storage: Storage, onError: (error: unknown) => void): Promise<KeyIndex> {
  const index = KeyIndex.follow(storage.db, { live: liveTables(storage.db), advancing: storage.runner }, onError)
  await index.settled()
  return index
}

/** The briefing usage read model in memory (/health's quota), loaded before it answers. */
export async function openUsageIndex(storage: Storage, onError: (error: unknown) => void): Promise<UsageIndex> {
  const index = UsageIndex.follow(storage.db, { live: liveTables(storage.db), advancing: storage.runner }, onError)
  await index.settled()
  return index
}

/** /health's quota: this month's usage from `usage`, in memory; the month is worked out again only when it ends. */
export function memoryQuota(usage: UsageIndex, quotas: QuotaPolicy): QuotaReader {
  let month = { name: '', from: 0, to: 0 }
  return (ownerId, tier, now) => {
    const ms = now.getTime()
    if (ms < month.from || ms >= month.to) {
      const name = quotaMonth(now)
      month = { name, from: Date.parse(`${name}-01T00:00:00.000Z`), to: monthResetsAt(name).getTime() }
    }
    return usageOf(quotas, tier, usage.used(ownerId, month.name))
  }
}

/** The answers of /zones and /zone/{slug}, prepared from the listings read model and kept current. */
export const openReadyZones = (storage: Storage, onError: (error: unknown) => void): ReadyZones =>
  ReadyZones.follow(storage.db, storage.runner, onError)

/**
 * GET /listings from memory, following this process's runner and every generation switch. Returns
 * at once: the listings load in the background and the first requests wait for them.
 */
export const followListingInventory = (storage: Storage, onError: (error: unknown) => void): ListingInventory =>
  ListingInventory.follow(storage.db, storage.runner, { onError })

/** `followListingInventory`, once loaded (tests and tools that want the listings before they go on). */
export function openListingInventory(storage: Storage, onError: (error: unknown) => void): Promise<ListingInventory> {
  return ListingInventory.open(storage.db, storage.runner, { onError })
}

/** What /readyz waits for (decision 0125): the read models the API answers from memory, loaded in the background. */
export const loadedInMemory = ({ zones, inventory }: { zones: ReadyZones; inventory: ListingInventory }): LoadingInMemory[] => [
  { what: 'zone statistics', firstLoaded: zones.firstLoaded },
  { what: 'listings', firstLoaded: inventory.firstLoaded },
]
