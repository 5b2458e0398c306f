import type { SwitchResult } from '../../../projections/engine/runner.ts'
import { storeCommand } from '../command.ts'
import { projectionName } from './params.ts'

/** What `projections promote` and `projections rollback` say: which generation is live now, and how to go back. */
export const switchedOutput = (s: SwitchResult) =>
  `${s.projection}: ${s.to} is live (was ${s.from ?? 'none'}); ${s.from ? `\`projections rollback ${s.projection}\` switches back` : ''}${s.note ? `\nnote: ${s.note}` : ''}`

/** The two commands that switch which generation of a read model is live: the runner's switch of that name. */
const switchCommand = (how: 'promote' | 'rollback', summary: string) =>
  storeCommand({
    name: `projections ${how}`,
    summary,
    params: { name: projectionName },
    run: (ctx, a) => ctx.runner[how](a.name),
    output: switchedOutput,
  })

export const projectionsPromote = switchCommand('promote', 'make the held (caught-up) generation live')
export const projectionsRollback = switchCommand('rollback', 'switch back to the previous generation at once (again: forward)')
