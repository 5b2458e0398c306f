import { Type } from '@sinclair/typebox'
import { ledgerLines, quotaLedger } from '../../audit/ledger.ts'
import { quotaAudit, quotaTotals } from '../../audit/quota.ts'
import { OwnerId } from '../../domain/owners/owner.ts'
import { Month } from '../../domain/schemas.ts'
import { fail, invalidRequest } from '../../shared/errors.ts'
import { expecting } from '../../shared/input-schema.ts'
import { param, storeCommand } from '../command.ts'
import { asOf, table } from '../text.ts'
import { loadOwner } from './aggregates.ts'
import { until } from './params.ts'

const FORMATS = ['table', 'ndjson'] as const
const Format = expecting(Type.Union(FORMATS.map((f) => Type.Literal(f))), `Expected ${FORMATS.join(' or ')}`)

/** The owner, given by position (`audit quota acme-corp`) or as `--owner`: one of the two, once. */
function ownerOf(a: { id?: string; owner?: string }): string {
  if (a.id !== undefined && a.owner !== undefined && a.id !== a.owner) throw invalidRequest(`"audit quota" takes one owner: ${a.id} or ${a.owner}`)
  const owner = a.id ?? a.owner
  if (owner === undefined) throw invalidRequest('"audit quota" needs the owner: audit quota OWNER, or --owner OWNER', [{ field: 'owner', message: 'Required' }])
  return owner
}

export const auditQuota = storeCommand({
  name: 'audit quota',
  summary: 'every briefing charge, free cache hit and Idempotency-Key replay of an owner in a month, with the running total and whether its client was answered',
  params: {
    id: param(Type.Optional(OwnerId), { placeholder: 'ID', help: 'the owner (or --owner ID)', positional: true }),
    owner: param(Type.Optional(OwnerId), { placeholder: 'ID', help: 'the owner (instead of by position)' }),
    month: param(Type.Optional(expecting(Month, 'Expected a month: YYYY-MM, e.g. 2026-05')), { placeholder: 'YYYY-MM', help: 'the UTC month (default: the month of --until, else this month)' }),
    until: until('only entries at or before this time'),
    format: param(Type.Optional(Format), {
      placeholder: FORMATS.join('|'),
      help: 'table (default), or ndjson: the owner\'s ledger of the month, its keys, rotations and entries, one JSON object a line (docs/quota-ledger.md)',
    }),
  },
  async run(ctx, a) {
    const owner = ownerOf(a)
    if ((await loadOwner(ctx.store, owner)).status === 'unregistered') throw fail.notFound(`owner ${owner} does not exist`)
    // The month defaults to the one `until` falls in, else the current one.
    const untilMonth = a.until !== undefined && !Number.isNaN(Date.parse(a.until)) ? new Date(a.until).toISOString().slice(0, 7) : undefined
    const month = a.month ?? untilMonth ?? ctx.clock().toISOString().slice(0, 7)
    if (a.format === 'ndjson') return { format: 'ndjson' as const, ledger: await quotaLedger(ctx.store, owner, month, a.until, ctx.clock()) }
    const entries = await quotaAudit(ctx.store, owner, month, a.until)
    return { format: 'table' as const, owner_id: owner, month, until: a.until ?? null, ...quotaTotals(entries), entries }
  },
  output(r) {
    // NDJSON ends each line with \n; the CLI prints one more.
    if (r.format === 'ndjson') return ledgerLines(r.ledger).slice(0, -1)
    const summary = `owner ${r.owner_id}, ${r.month} ${asOf(r.until)}: ${r.charged} charged, ${r.cache_hits} served from cache, ${r.replays} replayed (Idempotency-Key), ${r.not_answered} not answered, used ${r.used}`
    if (r.entries.length === 0) return summary
    return `${table(r.entries, ['position', 'at', 'type', 'actor', 'charged', 'answered', 'used', 'persona', 'verdict', 'briefing_id', 'idempotency_key'])}\n${summary}`
  },
})
