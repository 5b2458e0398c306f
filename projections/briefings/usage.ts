import { QUOTA_CATEGORY } from '../../src/domain/briefings/events.ts'
import { usedAt } from '../../src/domain/briefings/quota.ts'
import { type Projection, sql } from '../engine/projection.ts'
import { onCharge } from './charges.ts'

/**
 * Briefings charged per owner per quota month, for `usage` and /health: derived from the quota
 * stream, the authority, counted as the stream's length (`usedAt`, idempotent and order-proof).
 * Enforcement never relies on this table: the charge itself is checked by the event store.
 */
export const briefingUsageProjection: Projection<'usage'> = {
  name: 'briefing_usage',
  version: 1,
  categories: [QUOTA_CATEGORY],
  tables: { usage: 'briefing_usage' },
  schema: (t) => [
    `create table if not exists ${t.usage} (
      owner_id text not null,
      month text not null,
      used integer not null,
      last_at timestamptz not null,
      position bigint not null,
      primary key (owner_id, month)
    )`,
  ],
  indexes: () => [],
  apply: onCharge((charge, event, t) => [
    sql(
      `insert into ${t.usage} (owner_id, month, used, last_at, position) values ($1, $2, $3, $4, $5)
       on conflict (owner_id, month) do update
         set used = excluded.used, last_at = excluded.last_at, position = excluded.position
       where ${t.usage}.used < excluded.used`,
      charge.owner_id,
      charge.quota_month,
      usedAt(event.revision),
      charge.at,
      event.position,
    ),
  ]),
}
