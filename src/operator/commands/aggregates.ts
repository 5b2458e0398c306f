import { loadAggregate } from '../../eventstore/command-handler.ts'
import type { EventStore } from '../../eventstore/port.ts'
import { type Owner, ownerDecider, ownerStream } from '../../domain/owners/owner.ts'

/** An owner as its stream stands: what a key decision needs to know of the owner and of the actor. */
export async function loadOwner(store: EventStore, id: string): Promise<Owner> {
  return (await loadAggregate(store, ownerStream(id), ownerDecider)).state
}
