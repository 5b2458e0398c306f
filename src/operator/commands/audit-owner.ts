import * as trail from '../../audit/trail.ts'
import { storeCommand } from '../command.ts'
import { asOf } from '../text.ts'
import { trailTable, untilState } from './audits.ts'
import { ownerIdParam } from './owners.ts'

export const auditOwner = storeCommand({
  name: 'audit owner',
  summary: 'every event of an owner and of its keys, in order, with the resulting tier, status and active keys',
  params: { id: { ...ownerIdParam('the owner'), positional: true }, until: untilState },
  run: (ctx, a) => trail.auditOwner(ctx.store, a.id, a.until, ctx.clock().getTime()),
  output(a) {
    const state = a.state ? `${a.state.tier}, ${a.state.status}, ${a.state.active_keys.length} active key(s)` : 'not registered yet'
    return `${trailTable(a.events)}\nowner ${a.owner_id} ${asOf(a.until)}: ${state}`
  },
})
