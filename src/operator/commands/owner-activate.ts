import { storeCommand } from '../command.ts'
import { actor } from './params.ts'
import { changeOwner, ownerIdParam, ownerOutput } from './owners.ts'

export const ownerActivate = storeCommand({
  name: 'owner activate',
  summary: 'activate a deactivated owner again',
  params: { id: ownerIdParam('the owner'), actor: actor('recorded as who did it') },
  run: (ctx, a) => changeOwner(ctx, (at) => ({ type: 'ReactivateOwner', ownerId: a.id, actor: a.actor, at })),
  output: ownerOutput,
})
