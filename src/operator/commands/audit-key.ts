import * as trail from '../../audit/trail.ts'
import { param, storeCommand } from '../command.ts'
import { asOf } from '../text.ts'
import { trailTable, untilState } from './audits.ts'
import { KeyId } from './params.ts'

export const auditKey = storeCommand({
  name: 'audit key',
  summary: 'every event of a key, in order, with time, actor and the resulting state: was it valid then',
  params: {
    key_id: param(KeyId, { placeholder: 'KEY_ID', help: 'the key id (key_…)', positional: true }),
    until: untilState,
  },
  run: (ctx, a) => trail.auditKey(ctx.store, a.key_id, a.until),
  output(a) {
    const state = a.state
      ? `${a.state.status}, owner ${a.owner_id} ${a.state.owner_tier ?? '-'} ${a.state.owner_status}: ${a.state.valid ? 'valid' : 'NOT valid'}`
      : 'not issued yet'
    return `${trailTable(a.events)}\nkey ${a.key_id} ${asOf(a.until)}: ${state}`
  },
})
