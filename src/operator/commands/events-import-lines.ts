import { Type } from '@sinclair/typebox'
import { importBatch, parseLine } from '../../eventstore/transfer.ts'
import { fail } from '../../shared/errors.ts'
import { internalCommand } from '../command.ts'

/** `events import lines`: one batch of an export's event lines, sent by `events import`; see `importBatch`. */
export const eventsImportLines = internalCommand({
  name: 'events import lines',
  args: Type.Object({
    lines: Type.Array(Type.String(), { maxItems: 10_000 }),
    first_line: Type.Integer({ minimum: 1 }),
    after: Type.Integer({ minimum: 0 }),
  }),
  async run(ctx, a) {
    const events = a.lines.map((text, i) => {
      const line = parseLine(text, a.first_line + i)
      if (line.kind !== 'event') throw fail.invalidRequest(`line ${a.first_line + i}: an event was expected`)
      return line.event
    })
    return importBatch(ctx.store, events, a.first_line, a.after)
  },
})
