import { storeCommand } from '../command.ts'
import { projectionName } from './params.ts'

export const projectionsPrune = storeCommand({
  name: 'projections prune',
  summary: 'drop every generation but the live one and a build in progress',
  params: { name: projectionName },
  run: (ctx, a) => ctx.runner.prune(a.name),
  output: (p) =>
    p.dropped.length === 0
      ? `${p.projection}: nothing to prune (kept ${p.kept.join(', ')})`
      : `${p.projection}: dropped ${p.dropped.join(', ')} (${p.tables.length} tables); kept ${p.kept.join(', ')}`,
})
