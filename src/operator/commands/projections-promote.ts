import { storeCommand } from '../command.ts'
import { projectionName } from './params.ts'
import { switchedOutput } from './projections-rollback.ts'

export const projectionsPromote = storeCommand({
  name: 'projections promote',
  summary: 'make the held (caught-up) generation live',
  params: { name: projectionName },
  run: (ctx, a) => ctx.runner.promote(a.name),
  output: switchedOutput,
})
