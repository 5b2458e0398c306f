import { type ChildProcess, spawn } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { allProjections } from '../../src/storage.ts'
import { ProjectionRunner } from '../../projections/engine/runner.ts'
import { generateDemoFeed } from '../../src/domain/demo/market.ts'
import { openPglite } from '../../src/db/pglite.ts'
import type { Db } from '../../src/db/port.ts'
import { openPostgres } from '../../src/db/postgres.ts'
import { openSqlEventStore } from '../../src/eventstore/sql-event-store.ts'
import { ingestRecords } from '../../src/listings/ingest.ts'
import { DEFAULT_FX } from '../../src/domain/market/fx.ts'
import { BATCH_GUARANTEES, batchesEnv, databaseTargets, isolatedDatabaseUrl, type SharedDatabase } from '../support/databases.ts'
import { ANCHOR } from '../support/market.ts'
import { readModelRows } from '../support/read-models.ts'
import { BUN, tempDataDir } from '../support/server.ts'

/**
 * Crash safety: the projecting process is killed with SIGKILL at random moments, again and again,
 * then allowed to finish; the read models must then equal a clean rebuild, row for row. Same for
 * a blue/green build (which must resume, and never go live half-built) and for ingestion.
 */

const ROOT = resolve(import.meta.dirname, '../..')

type Run = { lines: string[]; killed: boolean }
/** Kill with SIGKILL `delayMs` after the `nth` output line that starts with `after`. */
type Kill = { after: string; nth: number; delayMs: number }

/** Runs `bun args…` to its end, or until killed as `kill` says. */
function run(args: string[], env: NodeJS.ProcessEnv, kill: Kill | null): Promise<Run> {
  return new Promise((done, fail) => {
    const child: ChildProcess = spawn(BUN, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
    const lines: string[] = []
    let stderr = ''
    let buffer = ''
    let seen = 0
    let timer: ReturnType<typeof setTimeout> | undefined
    child.stdout!.on('data', (chunk) => {
      buffer += chunk
      const parts = buffer.split('\n')
      buffer = parts.pop()!
      for (const line of parts) {
        lines.push(line)
        if (kill && timer === undefined && line.startsWith(kill.after) && ++seen === kill.nth) {
          timer = setTimeout(() => child.kill('SIGKILL'), kill.delayMs)
        }
      }
    })
    child.stderr!.on('data', (chunk) => (stderr += chunk))
    child.once('error', fail)
    child.once('exit', (code, signal) => {
      clearTimeout(timer)
      if (signal === 'SIGKILL') return done({ lines, killed: true })
      if (code !== 0) return fail(new Error(`${args.join(' ')} exited ${code}:\n${stderr}`))
      done({ lines, killed: false })
    })
  })
}

const random = (min: number, max: number) => Math.round(min + Math.random() * (max - min))

/**
 * The k-th kill of a run: a random moment up to 150 ms after the progress line that starts the
 * listings (odd kills: mostly inside the first batch) or after its first batch (even kills: into the
 * next one, once a checkpoint has moved). Each run so advances by at most a batch or two, and the
 * data holds enough batches for every kill to land while projecting.
 */
const killFor = (k: number): Kill => ({ after: 'progress listings ', nth: 1 + (k % 2), delayMs: random(0, 150) })
const describeKill = (kill: Kill) => `line ${kill.nth} + ${kill.delayMs} ms`

for (const target of databaseTargets('crash safety')) {
  // PGlite takes a second or two to open in each new process: fewer runs there. 20 kills in all.
  // PostgreSQL on a quiet machine projects a batch (1,000 events) in well under the 150 ms a kill may
  // wait, so a run can advance two or three: 10,000 listings leave batches for every kill to land in.
  const size = target.name === 'pglite' ? { listings: 2500, catchUpKills: 3, buildKills: 3 } : { listings: 10_000, catchUpKills: 7, buildKills: 7 }

  describe(`crash safety on ${target.name} (SIGKILL)`, () => {
    let database: SharedDatabase
    let where: string
    let lastListingPosition = 0
    const env = { ...process.env }

    beforeAll(async () => {
      database = await target.create()
      where = `${target.name}:${database.location}`
      const db = await database.connect()
      const store = await openSqlEventStore(db)
      await ingestRecords(store, generateDemoFeed({ seed: 'crash', listings: size.listings, anchor: ANCHOR }), DEFAULT_FX)
      lastListingPosition = await store.headPosition()
      await store.close()
      // PGlite: one process at a time, and the child is that process.
      await db.close()
    })
    afterAll(async () => database?.dispose())

    /** Opens the store in this process, runs `work`, closes it again (so that the next child can open it). */
    async function inspect<T>(work: (db: Db, runner: ProjectionRunner) => Promise<T>): Promise<T> {
      const db = await database.connect()
      const store = await openSqlEventStore(db)
      try {
        return await work(db, new ProjectionRunner(db, store, allProjections))
      } finally {
        await store.close()
        await db.close()
      }
    }

    /** The live and a fresh held rebuild of every projection, compared row by row. */
    async function expectEqualToCleanRebuild() {
      await inspect(async (db, runner) => {
        await runner.rebuild([], { hold: true })
        const [live, clean] = [await readModelRows(db, 'live'), await readModelRows(db, 'held')]
        expect(live.length).toBeGreaterThan(size.listings)
        expect(live).toEqual(clean)
        for (const projection of allProjections) await runner.prune(projection.name)
      })
    }

    it(
      `killed ${size.catchUpKills} times in a catch-up from position 0 and ${size.buildKills} times in a blue/green build: ` +
        'the build resumes, is never live half-built, and the read models end equal to a clean rebuild',
      async () => {
        const kills: string[] = []
        for (;;) {
          const kill = kills.length < size.catchUpKills ? killFor(kills.length) : null
          const outcome = await run(['test/support/projector.ts', 'catch-up', where], env, kill)
          if (!outcome.killed) break
          kills.push(`catch-up ${describeKill(kill!)}`)
        }
        expect(kills, 'every kill landed while projecting').toHaveLength(size.catchUpKills)

        const resumedFrom: number[] = []
        for (let builds = 0; ; ) {
          const kill = builds < size.buildKills ? killFor(builds) : null
          const outcome = await run(['test/support/projector.ts', 'build', where], env, kill)
          // What this process found at start: the live generation is whole, whatever was killed before.
          const found = JSON.parse(outcome.lines.find((l) => l.startsWith('found '))!.slice(6)) as { generation: string; state: string; position: number }[]
          const live = found.filter((g) => g.state === 'live')
          expect(live).toHaveLength(1)
          expect(live[0]!.position, `live ${live[0]!.generation} after kills: ${kills.join('; ')}`).toBe(lastListingPosition)
          const building = found.find((g) => g.state === 'building')
          if (building && building.position > 0) resumedFrom.push(building.position)
          if (outcome.killed) {
            builds += 1
            kills.push(`build ${describeKill(kill!)}`)
            continue
          }
          const built = JSON.parse(outcome.lines.find((l) => l.startsWith('built '))!.slice(6)) as { outcome: string }
          expect(built.outcome).toBe('promoted')
          if (!kill) break
          // That build finished before its kill came: the next run starts another one.
        }
        expect(kills).toHaveLength(size.catchUpKills + size.buildKills)
        // Interrupted builds were resumed from their checkpoint, not started over.
        expect(resumedFrom.length, `kills: ${kills.join('; ')}`).toBeGreaterThan(0)
        await expectEqualToCleanRebuild()
      },
      // Slow by nature: up to fourteen projector processes started and killed, then a clean rebuild to compare with.
      300_000,
    )
  })
}

// Once more stream by stream (as on KurrentDB before 25.1), on the embedded store.
const ingestionRuns = databaseTargets('ingestion killed mid-file').flatMap((target) =>
  BATCH_GUARANTEES.filter((batches) => batches === 'all-or-nothing' || target.name === 'pglite').map((batches) => ({ target, batches })),
)
for (const { target, batches } of ingestionRuns) {
  describe(`ingestion killed mid-file on ${target.name}, batches ${batches}`, () => {
    // Slow on purpose: a CLI ingest killed mid-file, then run again, on a demo market of 1,500-2,500 listings (over a minute on a busy machine).
    it('is re-run with the CLI and loses and duplicates nothing: the events are exactly those of a clean ingestion', async () => {
      const records = generateDemoFeed({ seed: 'kill-ingest', listings: target.name === 'pglite' ? 1500 : 2500, anchor: ANCHOR })
      const dir = tempDataDir('mirador-ingest-kill-')
      mkdirSync(join(dir, 'data'))
      const file = join(dir, 'feed.ndjson')
      writeFileSync(file, records.map((r) => JSON.stringify(r)).join('\n'))
      const schema = `ik_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 6)}`
      const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: join(dir, 'data'), ...batchesEnv(batches) }
      delete env.DATABASE_URL
      if (target.name === 'postgres') env.DATABASE_URL = isolatedDatabaseUrl(schema)
      const open = () => (target.name === 'postgres' ? openPostgres(process.env.DATABASE_URL!, { schema }) : openPglite(join(dir, 'data', 'pglite')))
      const EVENTS = `select stream_name || '/' || stream_revision || '/' || event_id || '/' || event_type || '/' || data::text as e
                        from mirador_events order by 1`
      const events = async () => {
        const db = await open()
        try {
          return (await db.query<{ e: string }>(EVENTS)).map((r) => r.e)
        } finally {
          await db.close()
        }
      }
      const clean = await target.open()
      let expected: string[]
      try {
        await ingestRecords(await openSqlEventStore(clean), records, DEFAULT_FX)
        expected = (await clean.query<{ e: string }>(EVENTS)).map((r) => r.e)
      } finally {
        await clean.close()
      }

      try {
        // Killed inside the file: the CLI records it in batches of 500 lines, each all or nothing or stream by stream.
        // At least three batches (~200 ms of work at the CLI's in-process rate) remain after the kill's
        // progress line, and the kill lands within 60 ms of it: on a fast machine the 4th of 6 lines plus
        // up to 150 ms let the file finish first (seen in a quiet CI run: `killed` false).
        const batches = Math.ceil(records.length / 500)
        const kill: Kill = { after: 'progress ingest ', nth: random(1, Math.max(1, batches - 3)), delayMs: random(0, 60) }
        const killed = await run(['test/support/projector.ts', `ingest=${file}`, `${target.name}:${target.name === 'postgres' ? schema : join(dir, 'data', 'pglite')}`], env, kill)
        expect(killed.killed).toBe(true)
        const recorded = await events()
        expect(recorded.length, `killed at ${describeKill(kill)}`).toBeGreaterThan(0)
        expect(recorded.length, `killed at ${describeKill(kill)}`).toBeLessThan(expected.length)

        const rerun = await new Promise<number>((done) => {
          spawn(BUN, ['src/cli.ts', 'ingest', file], { cwd: ROOT, env, stdio: 'ignore' }).once('exit', (code) => done(code ?? -1))
        })
        expect(rerun).toBe(0)
        expect(await events()).toEqual(expected)
      } finally {
        if (target.name === 'postgres') {
          const db = await openPostgres(process.env.DATABASE_URL!, { max: 1 })
          await db.exec(`drop schema if exists ${schema} cascade`)
          await db.close()
        }
      }
    }, 180_000)
  })
}
