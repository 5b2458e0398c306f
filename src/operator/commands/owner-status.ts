import type { OwnerCommand } from '../../domain/owners/owner.ts'
import { storeCommand } from '../command.ts'
import { actor } from './params.ts'
import { changeOwner, ownerIdParam, ownerOutput } from './owners.ts'

/** The two commands that switch an owner's status: the owner decider's command of that type. */
const statusCommand = (name: string, summary: string, type: Extract<OwnerCommand['type'], 'DeactivateOwner' | 'ReactivateOwner'>) =>
  storeCommand({
    name,
    summary,
    params: { id: ownerIdParam('the owner'), actor: actor('recorded as who did it') },
    run: (ctx, a) => changeOwner(ctx, (at) => ({ type, ownerId: a.id, actor: a.actor, at })),
    output: ownerOutput,
  })

export const ownerDeactivate = statusCommand('owner deactivate', 'deactivate an owner: all its keys answer 401 invalid_key until it is activated again', 'DeactivateOwner')
export const ownerActivate = statusCommand('owner activate', 'activate a deactivated owner again', 'ReactivateOwner')
