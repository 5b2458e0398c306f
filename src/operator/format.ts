import type { AuditEntry } from './commands.ts'

type Row = Record<string, unknown>

function table(rows: readonly Row[], columns: readonly string[]): string {
  const cell = (v: unknown) => (v === null || v === undefined ? '-' : Array.isArray(v) ? v.join(',') : String(v))
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)))
  const line = (values: string[]) => values.map((v, i) => v.padEnd(widths[i]!)).join('  ').trimEnd()
  return [line([...columns]), ...rows.map((r) => line(columns.map((c) => cell(r[c]))))].join('\n')
}

const auditTable = (events: readonly AuditEntry[]) =>
  table(
    events.map((e) => ({ ...e, details: detailsOf(e) })),
    ['position', 'at', 'type', 'actor', 'details'],
  )

const HIDDEN = new Set(['at', 'by', 'key_hash'])
const detailsOf = (e: AuditEntry) =>
  Object.entries(e.data)
    .filter(([k]) => !HIDDEN.has(k))
    .map(([k, v]) => `${k}=${typeof v === 'object' ? JSON.stringify(v) : v}`)
    .join(' ')

/** Plain text for people; the CLI prints JSON instead with --json. */
export function formatResult(command: string, result: unknown): string {
  const r = result as Row
  switch (command) {
    case 'owner create':
    case 'owner set-tier':
    case 'owner deactivate':
    case 'owner activate': {
      const owner = r.owner as Row
      const note = r.changed ? '' : ' (unchanged)'
      return `owner ${owner.owner_id}: tier ${owner.tier}, ${owner.status}${note}`
    }
    case 'key issue':
      return [
        `API key ${r.key_id} for ${r.owner_id} (scopes ${(r.scopes as string[]).join(',')}):`,
        '',
        `  ${r.key}`,
        '',
        'Store it now: it is shown only this once and cannot be retrieved later.',
      ].join('\n')
    case 'key revoke':
      return `key ${r.key_id} revoked`
    case 'key list': {
      const keys = r.keys as Row[]
      if (keys.length === 0) return `owner ${r.owner_id} has no keys`
      return table(keys, ['key_id', 'hint', 'scopes', 'status', 'label', 'issued_by', 'issued_at', 'revoked_at'])
    }
    case 'audit key':
    case 'audit owner':
      return auditTable(r.events as AuditEntry[])
    case 'audit quota': {
      const entries = r.entries as Row[]
      const summary = `owner ${r.owner_id}, ${r.month}: ${r.charged} charged, ${r.cache_hits} served from cache, ${r.replays} replayed (Idempotency-Key)`
      if (entries.length === 0) return summary
      return `${table(entries, ['position', 'at', 'event', 'charged', 'used', 'key_id', 'persona', 'verdict', 'briefing_id', 'idempotency_key'])}\n${summary}`
    }
    case 'ingest':
      return `${r.file}: read ${r.read}, new ${r.new}, changed ${r.changed}, unchanged ${r.unchanged}, rejected ${r.rejected} (${r.seconds} s)`
    case 'demo seed':
      return `demo market (seed ${r.seed}, ${r.listings} listings, history to ${r.anchor}): read ${r.read}, new ${r.new}, changed ${r.changed}, unchanged ${r.unchanged} (${r.seconds} s)`
    case 'events export':
      return `exported ${r.events} events to ${r.out === '-' ? 'stdout' : r.out} (${r.seconds} s, ${r.events_per_second} events/s)`
    case 'events import':
      return `${r.file}: ${r.events} events, ${r.imported} imported, ${r.already_present} already present (${r.seconds} s, ${r.events_per_second} events/s)`
    case 'projections status':
      return table(r.projections as Row[], ['projection', 'position', 'head', 'lag'])
    case 'projections rebuild':
      return `${table(r.projections as Row[], ['projection', 'position', 'head', 'lag'])}\nrebuilt ${(r.rebuilt as string[]).join(', ')} in ${r.seconds} s`
    default:
      return JSON.stringify(result, null, 2)
  }
}
