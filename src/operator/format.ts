import type { KeyAudit, OwnerAudit, TrailLine } from '../audit/trail.ts'
import type { BuildResult, GenerationStatus, PruneResult, SwitchResult } from '../../projections/engine/runner.ts'
import type { AnyProjectionDiff as ProjectionDiff } from './projection-diff.ts'

type Row = Record<string, unknown>

function table(rows: readonly Row[], columns: readonly string[]): string {
  const cell = (v: unknown) => (v === null || v === undefined ? '-' : Array.isArray(v) ? v.join(',') : String(v))
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)))
  const line = (values: string[]) => values.map((v, i) => v.padEnd(widths[i]!)).join('  ').trimEnd()
  return [line([...columns]), ...rows.map((r) => line(columns.map((c) => cell(r[c]))))].join('\n')
}

const text = (v: unknown) => (typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v))
const pairs = (record: Record<string, unknown>) =>
  Object.entries(record)
    .map(([k, v]) => `${k}=${Array.isArray(v) ? v.join(',') || '-' : text(v)}`)
    .join(' ')

const trailTable = (lines: readonly TrailLine<object>[]) =>
  table(
    lines.map((l) => ({ ...l, details: pairs(l.details), state: pairs(l.state as Record<string, unknown>) })),
    ['position', 'at', 'type', 'actor', 'state', 'details'],
  )

const asOf = (until: string | null) => (until ? `as of ${until}` : 'now')

const generationsTable = (rows: readonly GenerationStatus[]) =>
  table(
    rows.map((g) => ({ ...g, lag: g.lag_events, 'lag s': g.lag_seconds, 'note / builder / last error': [g.note, g.builder, g.last_error && `error: ${g.last_error}`].filter(Boolean).join('; ') || null })),
    ['projection', 'generation', 'state', 'position', 'head', 'lag', 'lag s', 'note / builder / last error'],
  )

const MAX_LINES = 40

function diffText(d: ProjectionDiff): string {
  const lines: string[] = []
  if (d.zones) {
    for (const c of d.zones.changes.slice(0, MAX_LINES)) lines.push(`  ${c.country} ${c.zone} ${c.field}: ${text(c.live)} → ${text(c.held)}`)
    if (d.zones.figures_changed > MAX_LINES) lines.push(`  … and ${d.zones.figures_changed - MAX_LINES} more figures (--json lists them)`)
  }
  if (d.listings) {
    for (const c of d.listings.changes.slice(0, MAX_LINES)) {
      const fields = Object.entries(c.fields).map(([f, v]) => `${f} ${text(v.live)} → ${text(v.held)}`)
      lines.push(`  listing ${c.listing_id} ${c.change}${c.change === 'changed' ? `: ${fields.join(', ')}` : ''}`)
    }
    if (d.listings.changed > MAX_LINES) lines.push(`  … and ${d.listings.changed - MAX_LINES} more listings (--json lists them)`)
  }
  for (const t of d.tables ?? []) {
    for (const c of t.changes.slice(0, MAX_LINES)) lines.push(`  ${t.table} ${pairs(c.key)}: ${c.live ? 'changed' : 'added'}${c.held ? '' : ' (removed)'} ${text(c.live)} → ${text(c.held)}`)
    if (t.changed > MAX_LINES) lines.push(`  … and ${t.changed - MAX_LINES} more rows of ${t.table} (--json lists them)`)
  }
  return [...lines, d.summary].join('\n')
}

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
    case 'audit key': {
      const a = result as KeyAudit
      const state = a.state ? `${a.state.status}, owner ${a.owner_id} ${a.state.owner_tier ?? '-'} ${a.state.owner_status}: ${a.state.valid ? 'valid' : 'NOT valid'}` : 'not issued yet'
      return `${trailTable(a.events)}\nkey ${a.key_id} ${asOf(a.until)}: ${state}`
    }
    case 'audit owner': {
      const a = result as OwnerAudit
      const state = a.state ? `${a.state.tier}, ${a.state.status}, ${a.state.active_keys.length} active key(s)` : 'not registered yet'
      return `${trailTable(a.events)}\nowner ${a.owner_id} ${asOf(a.until as string | null)}: ${state}`
    }
    case 'audit quota': {
      const entries = r.entries as Row[]
      const summary = `owner ${r.owner_id}, ${r.month} ${asOf(r.until as string | null)}: ${r.charged} charged, ${r.cache_hits} served from cache, ${r.replays} replayed (Idempotency-Key), used ${r.used}`
      if (entries.length === 0) return summary
      return `${table(entries, ['position', 'at', 'type', 'actor', 'charged', 'used', 'persona', 'verdict', 'briefing_id', 'idempotency_key'])}\n${summary}`
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
      return generationsTable(r.generations as GenerationStatus[])
    case 'projections rebuild': {
      const built = (r.built as BuildResult[]).map(
        (b) =>
          `${b.projection} ${b.generation}: ${b.events} event${b.events === 1 ? '' : 's'}${b.resumed_from > 0 ? ` (resumed from position ${b.resumed_from})` : ''} in ${b.seconds} s ` +
          `(${b.events_per_second} events/s), ${b.outcome === 'held' ? `held: \`projections diff ${b.projection}\`, then \`projections promote ${b.projection}\`` : 'promoted (live)'}`,
      )
      return `${generationsTable(r.generations as GenerationStatus[])}\n${built.join('\n')}`
    }
    case 'projections diff':
      return diffText(result as ProjectionDiff)
    case 'projections promote':
    case 'projections rollback': {
      const s = result as SwitchResult
      return `${s.projection}: ${s.to} is live (was ${s.from ?? 'none'}); ${s.from ? `\`projections rollback ${s.projection}\` switches back` : ''}${s.note ? `\nnote: ${s.note}` : ''}`
    }
    case 'projections prune': {
      const p = result as PruneResult
      return p.dropped.length === 0
        ? `${p.projection}: nothing to prune (kept ${p.kept.join(', ')})`
        : `${p.projection}: dropped ${p.dropped.join(', ')} (${p.tables.length} tables); kept ${p.kept.join(', ')}`
    }
    default:
      return JSON.stringify(result, null, 2)
  }
}
