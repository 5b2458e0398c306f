import { storeCommand } from '../command.ts'
import { actor } from './params.ts'
import { changeOwner, ownerIdParam, ownerOutput } from './owners.ts'

export const ownerDeactivate = storeCommand({
  name: 'owner deactivate',
  summary: 'deactivate an owner: all its keys answer 401 invalid_key until it is activated again',
  params: { id: ownerIdParam('the owner'), actor: actor('recorded as who did it') },
  run: (ctx, a) => changeOwner(ctx, (at) => ({ type: 'DeactivateOwner', ownerId: a.id, actor: a.actor, at })),
  output: ownerOutput,
})
