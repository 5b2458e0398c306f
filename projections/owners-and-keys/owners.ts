import type { RecordedEvent } from '../../src/eventstore/port.ts'
import { isOwnerEvent } from '../../src/domain/owners/owner.ts'
import { type Projection, type RowChange, sql, type Tables } from '../engine/projection.ts'

type T = Tables<'owners'>

/** One row per owner: tier and status, for the CLI and the auth index. */
export const ownersProjection: Projection<'owners'> = {
  name: 'owners',
  version: 1,
  categories: ['owner'],
  tables: { owners: 'owners' },
  servedCurrentOnly: true,
  schema: (t) => [
    `create table if not exists ${t.owners} (
      owner_id text primary key,
      tier text not null,
      status text not null,
      registered_at timestamptz not null,
      updated_at timestamptz not null,
      position bigint not null
    )`,
  ],
  indexes: (t) => [`create index if not exists ${t.owners}_position on ${t.owners} (position)`],
  apply(event: RecordedEvent, t: T): RowChange[] {
    const domain = { type: event.type, data: event.data }
    if (!isOwnerEvent(domain)) return []
    const { data } = domain
    switch (domain.type) {
      case 'OwnerRegistered':
        return [
          sql(
            `insert into ${t.owners} (owner_id, tier, status, registered_at, updated_at, position)
             values ($1, $2, 'active', $3, $3, $4)`,
            data.owner_id,
            domain.data.tier,
            data.at,
            event.position,
          ),
        ]
      case 'OwnerTierChanged':
        return [update(t, data.owner_id, 'tier', domain.data.to, data.at, event.position)]
      case 'OwnerDeactivated':
        return [update(t, data.owner_id, 'status', 'inactive', data.at, event.position)]
      case 'OwnerReactivated':
        return [update(t, data.owner_id, 'status', 'active', data.at, event.position)]
      default: {
        const never: never = domain
        throw new Error(`unhandled ${JSON.stringify(never)}`)
      }
    }
  },
}

const update = (t: T, ownerId: string, column: 'tier' | 'status', value: string, at: string, position: number) =>
  sql(
    `update ${t.owners} set ${column} = $2, updated_at = $3, position = $4 where owner_id = $1`,
    ownerId,
    value,
    at,
    position,
  )
