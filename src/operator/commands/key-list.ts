import { keysOfOwner } from '../../../projections/owners-and-keys/queries.ts'
import { keyStatusAt } from '../../domain/keys/key.ts'
import { fail } from '../../shared/errors.ts'
import { storeCommand } from '../command.ts'
import { table } from '../text.ts'
import { loadOwner } from './aggregates.ts'
import { ownerIdParam } from './owners.ts'

export const keyList = storeCommand({
  name: 'key list',
  summary: "list an owner's keys (hints, scopes, status; never the keys themselves)",
  params: { owner: ownerIdParam('the owner') },
  notes: 'Status: active, rolled (still valid until grace_ends_at), expired (rolled, grace over) or revoked.',
  async run(ctx, a) {
    await ctx.runner.catchUp()
    if ((await loadOwner(ctx.store, a.owner)).status === 'unregistered') {
      throw fail.notFound(`owner ${a.owner} does not exist`)
    }
    const now = ctx.clock().getTime()
    // A rolled key expires at its grace end without any event: its status is told at the time of asking.
    const keys = (await keysOfOwner(ctx.db, a.owner)).map((k) => ({
      ...k,
      status: keyStatusAt({ status: k.status, expiresAt: k.grace_ends_at === null ? null : Date.parse(k.grace_ends_at) }, now),
    }))
    return { owner_id: a.owner, keys }
  },
  output: (r) =>
    r.keys.length === 0
      ? `owner ${r.owner_id} has no keys`
      : table(r.keys, ['key_id', 'hint', 'scopes', 'status', 'grace_ends_at', 'successor_key_id', 'rolled_from', 'label', 'issued_at', 'revoked_at']),
})
