import { Type } from '@sinclair/typebox'
import { internalCommand } from '../command.ts'

/** `events read`: one page of the log and its head, sent by `events export` (and `events import`, to check nothing follows). */
export const eventsRead = internalCommand({
  name: 'events read',
  args: Type.Object({ after: Type.Integer({ minimum: 0 }), limit: Type.Integer({ minimum: 1, maximum: 10_000 }) }),
  run: async (ctx, a) => ({ events: await ctx.store.readAll(a.after, { limit: a.limit }), head: await ctx.store.headPosition() }),
})
