import type { EventStore } from '../eventstore/port.ts'
import { invalidRequest } from '../shared/errors.ts'
import { isValid } from '../shared/validate.ts'
import { Month } from '../domain/schemas.ts'
import { type QuotaAuditEntry, quotaAudit, quotaTotals } from './quota.ts'
import { auditOwner, parseUntil, type TrailLine } from './trail.ts'
import { headDigestAt } from './verify.ts'

/**
 * An owner's ledger of a month (docs/quota-ledger.md): its keys, their rotations and every entry of
 * `audit quota`, read up to one log position so that the whole is one moment of the record, and
 * summed up in a closing line an enterprise customer reconciles its bill with.
 */

export const LEDGER_FORMAT = 'mirador-quota-ledger'
export const LEDGER_VERSION = 1

export type LedgerHeader = { format: typeof LEDGER_FORMAT; version: typeof LEDGER_VERSION; owner_id: string; month: string; until: string | null; exported_at: string }
/** A key of the owner issued before the period's end: what its events say of it then. */
export type LedgerKey = {
  record: 'key'
  position: number
  key_id: string
  issued_at: string
  scopes: string[]
  rolled_from: string | null
  revoked_at: string | null
}
/** A key rolled to its successor (`key roll`) before the period's end. */
export type LedgerRotation = { record: 'rotation'; position: number; at: string; key_id: string; successor_key_id: string; grace_ends_at: string; by: string | null }
export type LedgerEntry = { record: 'entry' } & QuotaAuditEntry
/**
 * The totals, as `audit quota` sums them up, the log position the ledger was read up to, and the
 * tamper-evident log's head digest at that position (`audit verify --expect` checks it later).
 */
export type LedgerEnd = {
  end: true
  keys: number
  rotations: number
  entries: number
  charged: number
  cache_hits: number
  replays: number
  not_answered: number
  used: number
  through_position: number
  head_digest: string | null
}
export type Ledger = { header: LedgerHeader; keys: LedgerKey[]; rotations: LedgerRotation[]; entries: LedgerEntry[]; end: LedgerEnd }

/** The first instant after `month` (YYYY-MM), UTC. */
const monthEnd = (month: string) => {
  const [year, number] = month.split('-').map(Number) as [number, number]
  return Date.UTC(year, number, 1)
}

/** The keys and rotations among an owner's trail lines (events of the period read, in log order). */
function keysAndRotations(lines: readonly TrailLine<unknown>[]): { keys: LedgerKey[]; rotations: LedgerRotation[] } {
  const keys = new Map<string, LedgerKey>()
  const rotations: LedgerRotation[] = []
  for (const line of lines) {
    const d = line.details
    const keyId = String(d.key_id)
    if (line.type === 'ApiKeyIssued') {
      const rolledFrom = typeof d.rolled_from === 'string' ? d.rolled_from : null
      keys.set(keyId, { record: 'key', position: line.position, key_id: keyId, issued_at: line.at, scopes: d.scopes as string[], rolled_from: rolledFrom, revoked_at: null })
    } else if (line.type === 'ApiKeyRolled') {
      rotations.push({ record: 'rotation', position: line.position, at: line.at, key_id: keyId, successor_key_id: String(d.successor_key_id), grace_ends_at: String(d.grace_ends_at), by: line.actor })
    } else if (line.type === 'ApiKeyRevoked') {
      const key = keys.get(keyId)
      if (key) key.revoked_at = line.at
    }
  }
  return { keys: [...keys.values()], rotations }
}

/**
 * The ledger of `ownerId` for `month`: every event read is at or before the store's head when
 * reading began (`through_position`), and at or before `until` if given. Keys and rotations are those
 * recorded before the month's end (earlier ones included: a charge names a key issued any time before).
 */
export async function quotaLedger(store: EventStore, ownerId: string, month: string, until: string | undefined, now: Date): Promise<Ledger> {
  if (!isValid(Month, month)) throw invalidRequest('month must be YYYY-MM', [{ field: 'month', message: 'Expected YYYY-MM' }])
  const through = await store.headPosition()
  const period = Math.min(monthEnd(month) - 1, parseUntil(until))
  const owner = await auditOwner(store, ownerId, new Date(period).toISOString(), now.getTime())
  const { keys, rotations } = keysAndRotations(owner.events.filter((line) => line.position <= through))
  const audited = await quotaAudit(store, ownerId, month, until, through)
  const entries = audited.map((entry): LedgerEntry => ({ record: 'entry', ...entry }))
  const totals = quotaTotals(audited)
  return {
    header: { format: LEDGER_FORMAT, version: LEDGER_VERSION, owner_id: ownerId, month, until: until ?? null, exported_at: now.toISOString() },
    keys,
    rotations,
    entries,
    end: {
      end: true,
      keys: keys.length,
      rotations: rotations.length,
      entries: entries.length,
      charged: totals.charged,
      cache_hits: totals.cache_hits,
      replays: totals.replays,
      not_answered: totals.not_answered,
      used: totals.used,
      through_position: through,
      head_digest: await headDigestAt(store, through),
    },
  }
}

/** The ledger as NDJSON: the header, the keys, the rotations, the entries, the closing line; `\n` after each. */
export const ledgerLines = (ledger: Ledger): string =>
  [ledger.header, ...ledger.keys, ...ledger.rotations, ...ledger.entries, ledger.end].map((line) => `${JSON.stringify(line)}\n`).join('')
