import { Type } from '@sinclair/typebox'
import type { BuildResult } from '../../../projections/engine/runner.ts'
import { param, storeCommand } from '../command.ts'
import { generationsTable } from './projections-status.ts'

const builtLine = (b: BuildResult) =>
  `${b.projection} ${b.generation}: ${b.events} event${b.events === 1 ? '' : 's'}${b.resumed_from > 0 ? ` (resumed from position ${b.resumed_from})` : ''} in ${b.seconds} s ` +
  `(${b.events_per_second} events/s), ${b.outcome === 'held' ? `held: \`projections diff ${b.projection}\`, then \`projections promote ${b.projection}\`` : 'promoted (live)'}`

export const projectionsRebuild = storeCommand({
  name: 'projections rebuild',
  summary: 'build a new generation from the events beside the live one; it goes live when caught up (all when no name is given)',
  params: {
    names: param(Type.Array(Type.String()), { placeholder: 'NAME', help: ({ projections }) => `projections to rebuild: ${projections.join(', ')}`, positional: true }),
    hold: param(Type.Optional(Type.Boolean()), { help: 'build but do not promote: inspect with projections diff, then projections promote' }),
  },
  async run(ctx, a) {
    const built = await ctx.runner.rebuild(a.names, {
      hold: a.hold ?? false,
      progress: (name, done, total) => ctx.progress({ label: `rebuild ${name}`, done, total, unit: 'events' }),
    })
    return { built, generations: await ctx.runner.status() }
  },
  output: (r) => `${generationsTable(r.generations)}\n${r.built.map(builtLine).join('\n')}`,
  onCtrlC: (a, where) => {
    const again = `projections rebuild${a.names.length > 0 ? ` ${a.names.join(' ')}` : ''}`
    return where === 'server'
      ? 'interrupted: the rebuild goes on in the server (Ctrl-C does not cancel it); follow it with `projections status` (its generation is "building" until it goes live)'
      : `interrupted: the rebuild stopped; \`${again}\` resumes it where it stopped`
  },
})
