import { Type } from '@sinclair/typebox'
import { DEMO_DEFAULTS, HISTORY_DAYS, MIN_DEMO_LISTINGS, demoAnchor } from '../../domain/demo/market.ts'
import { seedDemo } from '../../demo/seed.ts'
import { fail } from '../../shared/errors.ts'
import { param, storeCommand } from '../command.ts'

export const demoSeed = storeCommand({
  name: 'demo seed',
  summary: 'add the deterministic demo market (docs/demo-market.md)',
  params: {
    listings: param(Type.Optional(Type.Integer({ minimum: MIN_DEMO_LISTINGS, maximum: 1_000_000 })), {
      placeholder: 'N',
      help: `number of listings (default ${DEMO_DEFAULTS.listings}, at least ${MIN_DEMO_LISTINGS})`,
    }),
    seed: param(Type.Optional(Type.String({ minLength: 1, maxLength: 100 })), { placeholder: 'S', help: `random seed (default ${DEMO_DEFAULTS.seed})` }),
    anchor: param(Type.Optional(Type.String({ format: 'date' })), {
      placeholder: 'YYYY-MM-DD',
      help: `last day of the ${HISTORY_DAYS}-day history (default: today, UTC)`,
    }),
  },
  async run(ctx, a) {
    const started = Date.now()
    const anchor = a.anchor ? new Date(`${a.anchor}T00:00:00.000Z`) : demoAnchor(ctx.clock())
    if (Number.isNaN(anchor.getTime())) throw fail.invalidRequest(`anchor must be a date YYYY-MM-DD, got ${a.anchor}`)
    const options = { seed: a.seed ?? DEMO_DEFAULTS.seed, listings: a.listings ?? DEMO_DEFAULTS.listings, anchor }
    const summary = await seedDemo(ctx.store, options, (done, total) => ctx.progress({ label: 'demo seed', done, total, unit: 'lines' }))
    return { ...summary, seed: options.seed, anchor: anchor.toISOString().slice(0, 10), seconds: (Date.now() - started) / 1000 }
  },
  output: (r) =>
    `demo market (seed ${r.seed}, ${r.listings} listings, history to ${r.anchor}): read ${r.read}, new ${r.new}, changed ${r.changed}, unchanged ${r.unchanged} (${r.seconds} s)`,
})
