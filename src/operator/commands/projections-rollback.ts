import type { SwitchResult } from '../../../projections/engine/runner.ts'
import { storeCommand } from '../command.ts'
import { projectionName } from './params.ts'

/** What `projections promote` and `projections rollback` say: which generation is live now, and how to go back. */
export const switchedOutput = (s: SwitchResult) =>
  `${s.projection}: ${s.to} is live (was ${s.from ?? 'none'}); ${s.from ? `\`projections rollback ${s.projection}\` switches back` : ''}${s.note ? `\nnote: ${s.note}` : ''}`

export const projectionsRollback = storeCommand({
  name: 'projections rollback',
  summary: 'switch back to the previous generation at once (again: forward)',
  params: { name: projectionName },
  run: (ctx, a) => ctx.runner.rollback(a.name),
  output: switchedOutput,
})
