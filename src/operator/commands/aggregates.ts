import { loadAggregate } from '../../eventstore/command-handler.ts'
import type { EventStore } from '../../eventstore/port.ts'
import { evolveKey, initialKey, isKeyEvent } from '../../domain/keys/key.ts'
import { type Owner, type OwnerEvent, evolveOwner, initialOwner, isOwnerEvent, ownerStream } from '../../domain/owners/owner.ts'

/** The owner and key aggregates as the command handler replays them. */

export const ownerAggregate = { initial: initialOwner, evolve: evolveOwner, is: isOwnerEvent }
export const keyAggregate = { initial: initialKey, evolve: evolveKey, is: isKeyEvent }

export async function loadOwner(store: EventStore, id: string): Promise<Owner> {
  return (await loadAggregate<Owner, OwnerEvent>(store, ownerStream(id), ownerAggregate)).state
}
