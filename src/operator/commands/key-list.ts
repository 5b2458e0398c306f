import { keysOfOwner } from '../../../projections/owners-and-keys/queries.ts'
import { AppError } from '../../shared/errors.ts'
import { storeCommand } from '../command.ts'
import { table } from '../text.ts'
import { loadOwner } from './aggregates.ts'
import { ownerIdParam } from './owners.ts'

export const keyList = storeCommand({
  name: 'key list',
  summary: "list an owner's keys (hints, scopes, status; never the keys themselves)",
  params: { owner: ownerIdParam('the owner') },
  async run(ctx, a) {
    await ctx.runner.catchUp()
    if ((await loadOwner(ctx.store, a.owner)).status === 'unregistered') {
      throw new AppError('not_found', `owner ${a.owner} does not exist`)
    }
    return { owner_id: a.owner, keys: await keysOfOwner(ctx.db, a.owner) }
  },
  output: (r) =>
    r.keys.length === 0
      ? `owner ${r.owner_id} has no keys`
      : table(r.keys, ['key_id', 'hint', 'scopes', 'status', 'label', 'issued_by', 'issued_at', 'revoked_at']),
})
