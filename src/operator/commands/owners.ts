import { handleCommand } from '../../eventstore/command-handler.ts'
import { type Owner, type OwnerCommand, OwnerId, TIERS, Tier, ownerDecider, ownerStream } from '../../domain/owners/owner.ts'
import { type OperatorContext, param } from '../command.ts'

/** What the owner commands share: their parameters, the decision, and the owner as they answer it. */

export type OwnerResult = { owner: { owner_id: string; tier: string; status: string } | null; changed: boolean }

export const ownerView = (owner: Owner): OwnerResult['owner'] =>
  owner.status === 'unregistered' ? null : { owner_id: owner.id, tier: owner.tier, status: owner.status }

/** Records the owner's decision on `command`; `changed` is false when it was already so. */
export async function changeOwner(ctx: OperatorContext, command: (at: string) => OwnerCommand): Promise<OwnerResult> {
  const decided = command(ctx.clock().toISOString())
  const result = await handleCommand(ctx.store, ownerStream(decided.ownerId), ownerDecider, (owner) => ownerDecider.decide(decided, owner), ctx.random.uuid)
  return { owner: ownerView(result.state), changed: result.events.length > 0 }
}

export function ownerOutput(r: OwnerResult): string {
  const owner = r.owner!
  return `owner ${owner.owner_id}: tier ${owner.tier}, ${owner.status}${r.changed ? '' : ' (unchanged)'}`
}

export const ownerIdParam = (help: string) => param(OwnerId, { placeholder: 'ID', help })
export const tierParam = (help: string) => param(Tier, { placeholder: TIERS.join('|'), help })
