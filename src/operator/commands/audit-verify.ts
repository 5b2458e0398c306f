import { Type } from '@sinclair/typebox'
import { type Verification, verifyLog } from '../../audit/verify.ts'
import { param, storeCommand } from '../command.ts'

/** Exit 1 when the log is not whole, or not what the expected digest says. */
const failed = (r: Verification) => r.fault !== null || (r.expected !== null && !r.expected.matches)

export const auditVerify = storeCommand({
  name: 'audit verify',
  summary: 'walk the event log and check its hash chain: the first event altered, inserted, deleted or reordered (exit 1), or the head digest',
  params: {
    head: param(Type.Optional(Type.Boolean()), { help: 'print only the head digest (POSITION:HEX16) of a whole log, to record elsewhere' }),
    expect: param(Type.Optional(Type.String()), { placeholder: 'DIGEST', help: 'a head digest printed earlier: exit 1 unless the log still gives it at its position' }),
  },
  notes: 'Exit codes: 0 the chain is whole (and gives --expect), 1 an event is at fault or --expect differs, 2 bad usage. See docs/audit-log.md.',
  run: async (ctx, a) => ({
    ...(await verifyLog(ctx.store, {
      expect: a.expect,
      progress: (done, total) => ctx.progress({ label: 'audit verify', done, total, unit: 'events' }),
    })),
    head_only: a.head ?? false,
  }),
  output(r) {
    if (r.head_only && !failed(r)) return r.head ?? 'none (empty log)'
    const lines = [
      r.fault
        ? `NOT WHOLE: ${r.fault.message}`
        : `whole: ${r.events} event${r.events === 1 ? '' : 's'} verified (${r.chain} chain), head ${r.head ?? 'none (empty log)'}`,
    ]
    if (r.expected) lines.push(`${r.expected.matches ? 'expected digest: ok' : 'EXPECTED DIGEST DIFFERS'}: ${r.expected.message}`)
    return lines.join('\n')
  },
  partlyRefused: (r) => failed(r),
  onCtrlC: (_a, where) =>
    where === 'server' ? 'interrupted: the server finishes the walk; its result is not shown (run audit verify again)' : 'interrupted: nothing was concluded; run audit verify again',
})
