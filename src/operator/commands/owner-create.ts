import { storeCommand } from '../command.ts'
import { optionalActor } from './params.ts'
import { changeOwner, ownerIdParam, ownerOutput, tierParam } from './owners.ts'

export const ownerCreate = storeCommand({
  name: 'owner create',
  summary: 'register an owner (an API customer)',
  params: {
    id: ownerIdParam('lowercase letters, digits, "_", "." and "-", e.g. acme-corp'),
    tier: tierParam('free has no API access; admin is unlimited and may issue keys for others'),
    actor: optionalActor('recorded as who did it (default: operator)'),
  },
  run: (ctx, a) => changeOwner(ctx, (at) => ({ type: 'RegisterOwner', ownerId: a.id, tier: a.tier, actor: a.actor ?? 'operator', at })),
  output: ownerOutput,
})
