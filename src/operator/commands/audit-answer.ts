import { Type } from '@sinclair/typebox'
import { answerAsRecorded } from '../../audit/answer.ts'
import { fail } from '../../shared/errors.ts'
import { param, storeCommand } from '../command.ts'

/**
 * `audit answer PATH --until T [--at-position P]`: the body the API answered to a GET at T, byte for
 * byte, from the events recorded by then, or from the events up to position P (the answer's `Mirador-Position`).
 */
export const auditAnswer = storeCommand({
  name: 'audit answer',
  summary: 'the answer the API gave (would have given) to a GET of the zone statistics, an estimate or the listings, from the events recorded by a past time or up to a log position',
  params: {
    path: param(Type.String({ minLength: 1 }), {
      placeholder: 'PATH',
      help: 'the GET as a client sent it, e.g. "/api/v1/zone/zona-10?country=GT" (zones, zone, history, estimate and listings paths)',
      positional: true,
    }),
    until: param(Type.String(), { placeholder: 'ISO-TIME', help: 'the time of the request (the answer\'s Date): events recorded later (late feed lines) are left out, unless --at-position is given' }),
    at_position: param(Type.Optional(Type.Integer({ minimum: 0 })), {
      placeholder: 'P',
      help: 'the log position the answer was computed from (its Mirador-Position header): the events up to it, whenever recorded, instead of those recorded by --until',
    }),
  },
  notes:
    'Unlike as_of (the market by the feed\'s own times, with everything recorded now), this is what the API knew at that time. The body is printed as the API sent it; --json adds the status. The read model is rebuilt from the log a page at a time (memory holds a page, whatever the log\'s size), with progress.',
  async run(ctx, a) {
    const until = Date.parse(a.until)
    if (Number.isNaN(until) || !/T.*(Z|[+-]\d\d:\d\d)$/.test(a.until)) {
      throw fail.invalidRequest(`--until must be an ISO 8601 time with offset, e.g. 2026-04-01T00:00:00Z (got ${a.until})`)
    }
    if (a.at_position !== undefined) {
      const head = await ctx.store.headPosition()
      if (a.at_position > head) throw fail.invalidRequest(`--at-position ${a.at_position} is beyond the log, which ends at position ${head}`)
    }
    const request = { path: a.path, until: new Date(until), ...(a.at_position === undefined ? {} : { through: a.at_position }) }
    return answerAsRecorded(ctx.db, ctx.store, request, ({ through, last }) => ctx.progress({ label: 'audit answer', done: through, total: last, unit: 'events' }))
  },
  output: (r) => r.body,
  resultStream: () => 'stdout',
})
