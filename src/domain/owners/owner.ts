import { type Static, Type } from '@sinclair/typebox'
import { fail } from '../../shared/errors.ts'
import { expecting } from '../../shared/input-schema.ts'
import type { Decider } from '../decider.ts'
import { Actor, At } from '../schemas.ts'

export const TIERS = ['free', 'pro', 'enterprise', 'admin'] as const
export const Tier = Type.Union(TIERS.map((t) => Type.Literal(t)))
export type Tier = Static<typeof Tier>
/** Tiers with API access (free has none). */
export type ApiTier = Exclude<Tier, 'free'>

/**
 * 2 to 63 characters: lowercase letters, digits, '_', '.' and '-', starting with a letter or digit
 * (`acme`, `acme-corp`). Stream names put the owner id between the category and any suffix of fixed
 * width (`quota-acme-corp-2026-05`), and a category ends at the first '-', so hyphens are safe.
 */
export const OWNER_ID_PATTERN = '^[a-z0-9][a-z0-9_.-]{1,62}$'
export const OwnerId = expecting(
  Type.String({ pattern: OWNER_ID_PATTERN, description: 'lowercase owner id, e.g. acme-corp' }),
  "Expected an owner id: 2–63 characters, lower-case letters, digits, '_', '.', '-', starting with a letter or digit (e.g. acme-corp)",
)


export const OwnerEventSchemas = {
  OwnerRegistered: Type.Object({ owner_id: OwnerId, tier: Tier, by: Actor, at: At }),
  OwnerTierChanged: Type.Object({ owner_id: OwnerId, from: Tier, to: Tier, by: Actor, at: At }),
  OwnerDeactivated: Type.Object({ owner_id: OwnerId, by: Actor, at: At }),
  OwnerReactivated: Type.Object({ owner_id: OwnerId, by: Actor, at: At }),
}
type Schemas = typeof OwnerEventSchemas
export type OwnerEvent = { [K in keyof Schemas]: { type: K; data: Static<Schemas[K]> } }[keyof Schemas]

export type Owner =
  | { status: 'unregistered' }
  | { status: 'active'; id: string; tier: Tier }
  | { status: 'inactive'; id: string; tier: Tier }

export type OwnerCommand =
  | { type: 'RegisterOwner'; ownerId: string; tier: Tier; actor: string; at: string }
  | { type: 'ChangeOwnerTier'; ownerId: string; tier: Tier; actor: string; at: string }
  | { type: 'DeactivateOwner'; ownerId: string; actor: string; at: string }
  | { type: 'ReactivateOwner'; ownerId: string; actor: string; at: string }

export const ownerStream = (ownerId: string) => `owner-${ownerId}`
export const initialOwner: Owner = { status: 'unregistered' }

const unknownOwner = (id: string) => fail.notFound(`owner ${id} does not exist`)

export function decideOwner(command: OwnerCommand, owner: Owner): OwnerEvent[] {
  const { ownerId: owner_id, actor: by, at } = command
  switch (command.type) {
    case 'RegisterOwner':
      if (owner.status !== 'unregistered') throw fail.conflict(`owner ${owner_id} already exists`)
      return [{ type: 'OwnerRegistered', data: { owner_id, tier: command.tier, by, at } }]
    case 'ChangeOwnerTier':
      if (owner.status === 'unregistered') throw unknownOwner(owner_id)
      if (owner.tier === command.tier) return []
      return [{ type: 'OwnerTierChanged', data: { owner_id, from: owner.tier, to: command.tier, by, at } }]
    case 'DeactivateOwner':
      if (owner.status === 'unregistered') throw unknownOwner(owner_id)
      return owner.status === 'inactive' ? [] : [{ type: 'OwnerDeactivated', data: { owner_id, by, at } }]
    case 'ReactivateOwner':
      if (owner.status === 'unregistered') throw unknownOwner(owner_id)
      return owner.status === 'active' ? [] : [{ type: 'OwnerReactivated', data: { owner_id, by, at } }]
    default: {
      const never: never = command
      throw new Error(`unknown command ${JSON.stringify(never)}`)
    }
  }
}

export function evolveOwner(owner: Owner, event: OwnerEvent): Owner {
  switch (event.type) {
    case 'OwnerRegistered':
      return { status: 'active', id: event.data.owner_id, tier: event.data.tier }
    case 'OwnerTierChanged':
      return owner.status === 'unregistered' ? owner : { ...owner, tier: event.data.to }
    case 'OwnerDeactivated':
      return owner.status === 'unregistered' ? owner : { status: 'inactive', id: owner.id, tier: owner.tier }
    case 'OwnerReactivated':
      return owner.status === 'unregistered' ? owner : { status: 'active', id: owner.id, tier: owner.tier }
    default: {
      const never: never = event
      throw new Error(`unknown event ${JSON.stringify(never)}`)
    }
  }
}

export const isOwnerEvent = (event: { type: string }): event is OwnerEvent => event.type in OwnerEventSchemas

/** Owners' decisions: registration, tier changes, deactivation and reactivation. */
export const ownerDecider: Decider<OwnerCommand, OwnerEvent, Owner> = {
  decide: decideOwner,
  evolve: evolveOwner,
  initialState: initialOwner,
  is: isOwnerEvent,
}
