import type { GenerationStatus } from '../../../projections/engine/runner.ts'
import { storeCommand } from '../command.ts'
import { table } from '../text.ts'

/** Every generation, one line each (`projections rebuild` shows it too). */
export const generationsTable = (rows: readonly GenerationStatus[]) =>
  table(
    rows.map((g) => ({
      ...g,
      lag: g.lag_events,
      'lag s': g.lag_seconds,
      'note / builder / last error': [g.note, g.builder, g.last_error && `error: ${g.last_error}`].filter(Boolean).join('; ') || null,
    })),
    ['projection', 'generation', 'state', 'position', 'head', 'lag', 'lag s', 'note / builder / last error'],
  )

export const projectionsStatus = storeCommand({
  name: 'projections status',
  summary: 'every generation of every projection: state, position, head, lag in events and seconds, last error',
  params: {},
  notes: ({ projections }) => `Names: ${projections.join(', ')}.`,
  run: async (ctx) => ({ generations: await ctx.runner.status() }),
  output: (r) => generationsTable(r.generations),
})
