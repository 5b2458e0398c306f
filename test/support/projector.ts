/**
 * The process the crash tests kill (run with Bun): opens a store as a server or the CLI would and
 * projects, printing what it found at start and a line per batch, then `done`.
 *
 *   bun test/support/projector.ts catch-up|build|ingest=FILE pglite:DIR|postgres:SCHEMA
 *
 * catch-up: every projection catches up (a server starting on a store it has not projected yet).
 * build:    `projections rebuild listings` (resuming an interrupted build, as the CLI does).
 * ingest:   `ingest FILE` as the CLI runs it on a store it opened itself, a line per batch recorded.
 *
 * The store records batches as the configuration says (SINGLE_STREAM_APPENDS), as the CLI's does.
 */
import { loadConfig } from '../../src/config.ts'
import { allProjections } from '../../src/storage.ts'
import { listGenerations } from '../../projections/engine/generations.ts'
import { generationId } from '../../projections/engine/generation-states.ts'
import { ProjectionRunner } from '../../projections/engine/runner.ts'
import { openPglite } from '../../src/db/pglite.ts'
import { openPostgres } from '../../src/db/postgres.ts'
import { openSqlEventStore } from '../../src/eventstore/sql-event-store.ts'
import { runOperatorCommand } from '../../src/operator/commands.ts'
import { ingestFileThrough } from '../../src/operator/commands/ingest.ts'
import { errorLine } from '../../src/operator/outcome.ts'
import { cryptoRandom, systemClock } from '../../src/shared/random.ts'

const [mode, where] = process.argv.slice(2)
const [kind, location] = [where!.slice(0, where!.indexOf(':')), where!.slice(where!.indexOf(':') + 1)]
const db = kind === 'pglite' ? await openPglite(location) : await openPostgres(process.env.DATABASE_URL!, { schema: location, max: 2 })
const store = await openSqlEventStore(db, { batches: loadConfig(process.env).singleStreamAppends ? 'stream-by-stream' : 'all-or-nothing' })
const runner = new ProjectionRunner(db, store, allProjections)
const say = (line: string) => process.stdout.write(`${line}\n`)

const registry = await db.query<{ present: boolean }>(`select to_regclass('mirador_generations') is not null as present`)
const found = registry[0]!.present ? await listGenerations(db, ['listings']) : []
say(`found ${JSON.stringify(found.map((g) => ({ generation: generationId(g), state: g.state, position: g.position })))}`)

const progress = (projection: string, position: number, head: number) => say(`progress ${projection} ${position} ${head}`)
if (mode === 'catch-up') {
  await runner.catchUp(progress)
} else if (mode!.startsWith('ingest=')) {
  const ctx = { db, store, runner, clock: systemClock, random: cryptoRandom, progress: () => {} }
  const outcome = await ingestFileThrough(
    async (name, args) => {
      try {
        return { ok: true, result: await runOperatorCommand(ctx, name, args) }
      } catch (error) {
        return errorLine(error)
      }
    },
    mode!.slice('ingest='.length),
    { progress: ({ done, total }) => say(`progress ingest ${done} ${total}`), interrupted: new AbortController().signal },
    () => {},
  )
  say(`ingested ${JSON.stringify(outcome)}`)
} else {
  const [built] = await runner.rebuild(['listings'], { progress })
  say(`built ${JSON.stringify(built)}`)
}
say('done')
await store.close()
await db.close()
process.exit(0)
