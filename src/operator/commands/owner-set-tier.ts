import { storeCommand } from '../command.ts'
import { actor } from './params.ts'
import { changeOwner, ownerIdParam, ownerOutput, tierParam } from './owners.ts'

export const ownerSetTier = storeCommand({
  name: 'owner set-tier',
  summary: "change an owner's tier",
  params: { id: ownerIdParam('the owner'), tier: tierParam('the new tier'), actor: actor('recorded as who did it') },
  run: (ctx, a) => changeOwner(ctx, (at) => ({ type: 'ChangeOwnerTier', ownerId: a.id, tier: a.tier, actor: a.actor, at })),
  output: ownerOutput,
})
