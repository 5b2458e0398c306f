import * as trail from '../../audit/trail.ts'
import { param, storeCommand } from '../command.ts'
import { asOf } from '../text.ts'
import { trailTable, untilState } from './audits.ts'
import { KeyId } from './params.ts'

export const auditKey = storeCommand({
  name: 'audit key',
  summary: 'every event of a key (and of the keys a roll links it to), in order, with time, actor and the resulting state: was it valid then',
  params: {
    key_id: param(KeyId, { placeholder: 'KEY_ID', help: 'the key id (key_…)', positional: true }),
    until: untilState,
  },
  run: (ctx, a) => trail.auditKey(ctx.store, a.key_id, a.until, ctx.clock().getTime()),
  output(a) {
    const standing = (s: trail.KeyState) =>
      `${s.status}${s.grace_ends_at ? `, rolled to ${s.rolled_to} (grace ends ${s.grace_ends_at})` : ''}, owner ${a.owner_id} ${s.owner_tier ?? '-'} ${s.owner_status}: ${s.valid ? 'valid' : 'NOT valid'}`
    const linked = a.linked.map((l) => `${l.relation} ${l.key_id} ${asOf(a.until)}: ${l.state ? standing(l.state) : 'not issued'}`)
    return [trailTable(a.events), `key ${a.key_id} ${asOf(a.until)}: ${a.state ? standing(a.state) : 'not issued yet'}`, ...linked].join('\n')
  },
})
