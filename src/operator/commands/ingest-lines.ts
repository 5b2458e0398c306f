import { Type } from '@sinclair/typebox'
import { DEFAULT_FX } from '../../domain/market/fx.ts'
import { type Rejection, ingestLines as ingest } from '../../listings/ingest.ts'
import { internalCommand } from '../command.ts'

export type IngestedBatch = { read: number; new: number; changed: number; unchanged: number; rejected: number; rejections: Rejection[] }

/**
 * `ingest lines`: one batch of a feed's consecutive lines, the first of them line `first_line` of the
 * file, sent by `ingest` as it reads the file; bad lines are numbered (in their reason too) as in the file.
 */
export const ingestLines = internalCommand({
  name: 'ingest lines',
  args: Type.Object({
    lines: Type.Array(Type.String(), { maxItems: 5000 }),
    first_line: Type.Integer({ minimum: 1 }),
  }),
  async run(ctx, a): Promise<IngestedBatch> {
    const rejections: Rejection[] = []
    const summary = await ingest(ctx.store, a.lines, {
      fx: DEFAULT_FX,
      now: ctx.clock(),
      batchSize: a.lines.length,
      firstLine: a.first_line,
      onRejected: (r) => rejections.push(r),
    })
    return { read: summary.read, new: summary.new, changed: summary.changed, unchanged: summary.unchanged, rejected: summary.rejected, rejections }
  },
})
