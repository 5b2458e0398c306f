import { Type } from '@sinclair/typebox'
import { quotaAudit, quotaTotals } from '../../audit/quota.ts'
import { fail } from '../../shared/errors.ts'
import { param, storeCommand } from '../command.ts'
import { asOf, table } from '../text.ts'
import { loadOwner } from './aggregates.ts'
import { ownerIdParam } from './owners.ts'
import { until } from './params.ts'

export const auditQuota = storeCommand({
  name: 'audit quota',
  summary: 'every briefing charge, free cache hit and Idempotency-Key replay of an owner in a month, with the running total and whether its client was answered',
  params: {
    id: { ...ownerIdParam('the owner'), positional: true },
    month: param(Type.Optional(Type.String()), { placeholder: 'YYYY-MM', help: 'the UTC month (default: the month of --until, else this month)' }),
    until: until('only entries at or before this time'),
  },
  async run(ctx, a) {
    if ((await loadOwner(ctx.store, a.id)).status === 'unregistered') throw fail.notFound(`owner ${a.id} does not exist`)
    // The month defaults to the one `until` falls in, else the current one.
    const untilMonth = a.until !== undefined && !Number.isNaN(Date.parse(a.until)) ? new Date(a.until).toISOString().slice(0, 7) : undefined
    const month = a.month ?? untilMonth ?? ctx.clock().toISOString().slice(0, 7)
    const entries = await quotaAudit(ctx.store, a.id, month, a.until)
    return { owner_id: a.id, month, until: a.until ?? null, ...quotaTotals(entries), entries }
  },
  output(r) {
    const summary = `owner ${r.owner_id}, ${r.month} ${asOf(r.until)}: ${r.charged} charged, ${r.cache_hits} served from cache, ${r.replays} replayed (Idempotency-Key), ${r.not_answered} not answered, used ${r.used}`
    if (r.entries.length === 0) return summary
    return `${table(r.entries, ['position', 'at', 'type', 'actor', 'charged', 'answered', 'used', 'persona', 'verdict', 'briefing_id', 'idempotency_key'])}\n${summary}`
  },
})
