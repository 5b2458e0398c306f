import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ProjectionRunner } from '../../projections/engine/runner.ts'
import { openPglite } from '../../src/db/pglite.ts'
import type { Db } from '../../src/db/port.ts'
import { MAX_FEED_LINE_BYTES } from '../../src/domain/listings/feed.ts'
import { listingStream } from '../../src/domain/listings/listing.ts'
import { openSqlEventStore } from '../../src/eventstore/sql-event-store.ts'
import type { EventStore } from '../../src/eventstore/port.ts'
import type { OperatorContext } from '../../src/operator/command.ts'
import { operatorCommand, runOperatorCommand } from '../../src/operator/commands.ts'
import { errorLine, type Outcome } from '../../src/operator/outcome.ts'
import { cryptoRandom } from '../../src/shared/random.ts'
import { LONG_FEED, writeLongFeed } from '../support/feed-files.ts'
import { aLine } from '../support/market.ts'

/** The clock of the store's side: the time of the run. */
const NOW = new Date('2026-04-01T00:00:00.000Z')
const at = (minutes: number) => new Date(NOW.getTime() + minutes * 60_000).toISOString()

describe('ingest FILE on a store the CLI opened itself', () => {
  let db: Db
  let store: EventStore
  let dir: string
  let ctx: OperatorContext

  beforeAll(async () => {
    db = await openPglite()
    store = await openSqlEventStore(db)
    dir = mkdtempSync(join(tmpdir(), 'mirador-ingest-file-'))
    ctx = { db, store, runner: new ProjectionRunner(db, store, []), clock: () => NOW, random: cryptoRandom, progress: () => {} }
  })
  afterAll(async () => {
    await store?.close()
    await db?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  /** `ingest FILE` as the CLI runs it without a server: the command's flow, its store commands run in this process. */
  async function ingest(file: string): Promise<{ outcome: Outcome; stderr: string[] }> {
    const command = operatorCommand('ingest')
    if (command?.kind !== 'client') throw new Error('ingest is a client command')
    const stderr: string[] = []
    const send = async (name: string, args: unknown): Promise<Outcome> => {
      try {
        return { ok: true, result: await runOperatorCommand(ctx, name, args) }
      } catch (error) {
        return errorLine(error)
      }
    }
    const outcome = await command.flow(send, { file } as never, { progress: () => {}, warn: (line) => stderr.push(line), interrupted: new AbortController().signal })
    return { outcome, stderr }
  }
  const typesOf = async (sourceId: string) => (await store.readStream(listingStream('broker', sourceId))).map((e) => e.type)

  it('names every bad line by its number in the file, past the first 500 lines too', async () => {
    const { outcome, stderr } = await ingest(writeLongFeed(dir))
    expect(stderr).toEqual(LONG_FEED.rejections)
    expect(outcome).toMatchObject({ ok: true, result: LONG_FEED.summary })
    expect(await typesOf('long-1209')).toEqual(['ListingIngested'])
    expect(await typesOf('long-1002')).toEqual([])
  })

  it('numbers the lines after a line over 1 MiB as in the file', async () => {
    const file = join(dir, 'oversized.ndjson')
    const big = JSON.stringify(aLine({ source_id: 'big', title: 'x'.repeat(MAX_FEED_LINE_BYTES) }))
    writeFileSync(file, [JSON.stringify(aLine({ source_id: 'before-big' })), big, '[3]', JSON.stringify(aLine({ source_id: 'after-big', currency: 'HNL' }))].join('\n'))
    const { stderr } = await ingest(file)
    expect(stderr).toEqual([
      `line 2: ${Buffer.byteLength(big)} bytes; a feed line may be at most 1 MiB (1048576 bytes)`,
      'line 3: must be a JSON object',
      'line 4: currency: HNL is not used in GT (use GTQ or USD)',
    ])
  })

  it('refuses a line observed more than 5 minutes after the time of the run, recording nothing of it', async () => {
    const file = join(dir, 'future.ndjson')
    const lines = [
      aLine({ source_id: 'past', observed_at: at(-60) }),
      aLine({ source_id: 'hour-ahead', observed_at: at(60) }),
      aLine({ source_id: 'within-skew', observed_at: at(5) }),
      aLine({ source_id: 'past', price: 1_000_000, observed_at: at(6) }),
    ]
    writeFileSync(file, `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`)
    const { outcome, stderr } = await ingest(file)
    expect(stderr).toEqual([
      'line 2: observed_at: is in the future (more than 5 minutes after the time of the run, 2026-04-01T00:00:00.000Z)',
      'line 4: observed_at: is in the future (more than 5 minutes after the time of the run, 2026-04-01T00:00:00.000Z)',
    ])
    expect(outcome).toMatchObject({ ok: true, result: { read: 4, new: 2, changed: 0, rejected: 2 } })
    expect(await typesOf('hour-ahead')).toEqual([])
    expect(await typesOf('within-skew')).toEqual(['ListingIngested'])
    const past = await store.readStream(listingStream('broker', 'past'))
    expect(past.map((e) => [e.type, e.data.observed_at])).toEqual([['ListingIngested', at(-60)]])
  })
})
