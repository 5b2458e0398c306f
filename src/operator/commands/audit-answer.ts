import { Type } from '@sinclair/typebox'
import { answerAsRecorded } from '../../audit/answer.ts'
import { fail } from '../../shared/errors.ts'
import { param, storeCommand } from '../command.ts'

/** `audit answer PATH --until T`: the body the API answered to a GET at T, byte for byte, from the events recorded by then. */
export const auditAnswer = storeCommand({
  name: 'audit answer',
  summary: 'the answer the API gave (would have given) to a GET of the zone statistics or an estimate at a past time, from the events recorded by then',
  params: {
    path: param(Type.String({ minLength: 1 }), {
      placeholder: 'PATH',
      help: 'the GET as a client sent it, e.g. "/api/v1/zone/zona-10?country=GT" (zones, zone, history and estimate paths)',
      positional: true,
    }),
    until: param(Type.String(), { placeholder: 'ISO-TIME', help: 'the time of the request: events recorded later (late feed lines) are left out' }),
  },
  notes:
    'Unlike as_of (the market by the feed\'s own times, with everything recorded now), this is what the API knew at that time. The body is printed as the API sent it; --json adds the status.',
  async run(ctx, a) {
    const until = Date.parse(a.until)
    if (Number.isNaN(until) || !/T.*(Z|[+-]\d\d:\d\d)$/.test(a.until)) {
      throw fail.invalidRequest(`--until must be an ISO 8601 time with offset, e.g. 2026-04-01T00:00:00Z (got ${a.until})`)
    }
    return answerAsRecorded(ctx.db, ctx.store, a.path, new Date(until))
  },
  output: (r) => r.body,
  resultStream: () => 'stdout',
})
