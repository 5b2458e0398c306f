import type { RecordedEvent } from '../src/eventstore/port.ts'
import { isOwnerEvent } from '../src/owners/owner.ts'
import { type Projection, type RowChange, sql } from './projection.ts'

export const OWNERS_TABLE = 'owners_v1'

/** One row per owner: tier and status, for the CLI and the auth index. */
export const ownersProjection: Projection = {
  name: 'owners',
  version: 1,
  categories: ['owner'],
  tables: [OWNERS_TABLE],
  schema: [
    `create table if not exists ${OWNERS_TABLE} (
      owner_id text primary key,
      tier text not null,
      status text not null,
      registered_at timestamptz not null,
      updated_at timestamptz not null,
      position bigint not null
    )`,
    `create index if not exists ${OWNERS_TABLE}_position on ${OWNERS_TABLE} (position)`,
  ],
  apply(event: RecordedEvent): RowChange[] {
    const domain = { type: event.type, data: event.data }
    if (!isOwnerEvent(domain)) return []
    const { data } = domain
    switch (domain.type) {
      case 'OwnerRegistered':
        return [
          sql(
            `insert into ${OWNERS_TABLE} (owner_id, tier, status, registered_at, updated_at, position)
             values ($1, $2, 'active', $3, $3, $4)`,
            data.owner_id,
            domain.data.tier,
            data.at,
            event.position,
          ),
        ]
      case 'OwnerTierChanged':
        return [update(data.owner_id, 'tier', domain.data.to, data.at, event.position)]
      case 'OwnerDeactivated':
        return [update(data.owner_id, 'status', 'inactive', data.at, event.position)]
      case 'OwnerReactivated':
        return [update(data.owner_id, 'status', 'active', data.at, event.position)]
      default: {
        const never: never = domain
        throw new Error(`unhandled ${JSON.stringify(never)}`)
      }
    }
  },
}

const update = (ownerId: string, column: 'tier' | 'status', value: string, at: string, position: number) =>
  sql(
    `update ${OWNERS_TABLE} set ${column} = $2, updated_at = $3, position = $4 where owner_id = $1`,
    ownerId,
    value,
    at,
    position,
  )
