import { type Projection, sql } from '../../projections/engine/projection.ts'

/** A projection for specs of the engine: events of category `tick` counted per stream, in one table `<name>_counts`. */
export const tickCounter = (name: string): Projection<'counts'> => ({
  name,
  version: 1,
  categories: ['tick'],
  tables: { counts: `${name}_counts` },
  schema: (t) => [`create table if not exists ${t.counts} (stream text primary key, n integer not null)`],
  indexes: () => [],
  apply: (event, t) => [sql(`insert into ${t.counts} values ($1, 1) on conflict (stream) do update set n = ${t.counts}.n + 1`, event.stream)],
})
