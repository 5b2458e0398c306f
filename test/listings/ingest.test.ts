import { createReadStream } from 'node:fs'
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Db } from '../../src/db/port.ts'
import type { EventStore } from '../../src/eventstore/port.ts'
import { openSqlEventStore } from '../../src/eventstore/sql-event-store.ts'
import { type IngestProgress, ingestLines, ingestRecords, type Rejection } from '../../src/listings/ingest.ts'
import { listingStream } from '../../src/domain/listings/listing.ts'
import { DEFAULT_FX } from '../../src/domain/market/fx.ts'
import { generateDemoFeed } from '../../src/domain/demo/market.ts'
import { BATCH_GUARANTEES, databaseTargets } from '../support/databases.ts'
import { aLine, aRecord, ANCHOR } from '../support/market.ts'

const NOW = new Date('2026-04-01T00:00:00.000Z')

/** The store, whose first `readStreams` answers only once released: a run that is slow after reading. */
function holdingFirstRead(store: EventStore) {
  let reached!: () => void
  let release!: () => void
  const released = new Promise<void>((resolve) => (release = resolve))
  let first = true
  const holding: EventStore = {
    ...store,
    async readStreams(streams) {
      const read = await store.readStreams(streams)
      if (first) {
        first = false
        reached()
        await released
      }
      return read
    },
  }
  return { store: holding, reached: new Promise<void>((resolve) => (reached = resolve)), release }
}
const options = { fx: DEFAULT_FX, now: NOW }

for (const [target, batches] of databaseTargets('listing ingestion').flatMap((t) => BATCH_GUARANTEES.map((b) => [t, b] as const))) {
  describe(`listing ingestion on ${target.name}, batches ${batches}`, () => {
    let db: Db
    let store: EventStore
    let dir: string

    beforeAll(async () => {
      db = await target.open()
      store = await openSqlEventStore(db, { batches })
      dir = await mkdtemp(join(tmpdir(), 'mirador-ingest-'))
    })
    afterAll(async () => {
      await store?.close()
      await db?.close()
      await rm(dir, { recursive: true, force: true })
    })

    const typesIn = async (source: string, sourceId: string) =>
      (await store.readStream(listingStream(source, sourceId))).map((e) => e.type)

    it('records a market once: re-running the same lines records nothing', async () => {
      const records = generateDemoFeed({ seed: 'ingest', listings: 150, anchor: ANCHOR })
      const first = await ingestRecords(store, records, DEFAULT_FX)
      expect(first.new).toBe(150)
      expect(first.new + first.changed + first.unchanged).toBe(records.length)
      expect(first.unchanged).toBe(0)
      const head = await store.headPosition()

      expect(await ingestRecords(store, records, DEFAULT_FX)).toEqual({ new: 0, changed: 0, unchanged: records.length })
      expect(await store.headPosition()).toBe(head)
    })

    it('records a changed price as exactly one event, with event times from the feed', async () => {
      const record = aRecord({ source_id: 'price-change' })
      expect(await ingestRecords(store, [record], DEFAULT_FX)).toEqual({ new: 1, changed: 0, unchanged: 0 })
      const later = { ...record, price: 1_472_500, observed_at: '2026-03-09T08:00:00.000Z' }
      expect(await ingestRecords(store, [later], DEFAULT_FX)).toEqual({ new: 0, changed: 1, unchanged: 0 })
      const events = await store.readStream(listingStream('broker', 'price-change'))
      expect(events.map((e) => e.type)).toEqual(['ListingIngested', 'ListingPriceChanged'])
      expect(events[1]!.data).toMatchObject({ price_local: 1_472_500, price_usd: 190_000, observed_at: later.observed_at })
      expect(await ingestRecords(store, [record, later], DEFAULT_FX)).toEqual({ new: 0, changed: 0, unchanged: 2 })
    })

    it('applies several lines of one listing in one run, in their order', async () => {
      const lines = [
        aRecord({ source_id: 'one-run' }),
        aRecord({ source_id: 'one-run', verified_at: '2026-03-02T00:00:00.000Z', observed_at: '2026-03-02T00:00:00.000Z' }),
        aRecord({
          source_id: 'one-run',
          verified_at: '2026-03-02T00:00:00.000Z',
          status: 'delisted',
          observed_at: '2026-03-03T00:00:00.000Z',
        }),
      ]
      expect(await ingestRecords(store, lines, DEFAULT_FX)).toEqual({ new: 1, changed: 2, unchanged: 0 })
      expect(await typesIn('broker', 'one-run')).toEqual(['ListingIngested', 'ListingVerified', 'ListingDelisted'])
    })

    it('lets concurrent ingestions of the same listing record each change once', async () => {
      const record = aRecord({ source_id: 'contended' })
      const results = await Promise.all([1, 2, 3, 4].map(() => ingestRecords(store, [record], DEFAULT_FX)))
      expect(results.reduce((n, r) => n + r.new, 0)).toBe(1)
      expect(results.reduce((n, r) => n + r.unchanged, 0)).toBe(3)
      expect(await typesIn('broker', 'contended')).toEqual(['ListingIngested'])
    })

    it('retries a run that lost a race with another change of the same listing; the latest observation wins', async () => {
      const base = aRecord({ source_id: 'raced' })
      await ingestRecords(store, [base], DEFAULT_FX)
      const changes = [1, 2, 3, 4, 5].map((day) => ({
        ...base,
        price: 1_500_000 - day * 10_000,
        observed_at: `2026-03-0${day + 1}T00:00:00.000Z`,
      }))
      const results = await Promise.all(changes.map((change) => ingestRecords(store, [change], DEFAULT_FX)))
      expect(results.reduce((n, r) => n + r.changed + r.unchanged, 0)).toBe(5)
      const events = await store.readStream(listingStream('broker', 'raced'))
      expect(events.filter((e) => e.type === 'ListingPriceChanged').length).toBe(results.reduce((n, r) => n + r.changed, 0))
      expect(events[events.length - 1]!.data).toMatchObject({ price_local: 1_450_000, observed_at: '2026-03-06T00:00:00.000Z' })
    })

    it('records a listing once when another run recorded part of what this run decided, after this run read it', async () => {
      const first = aRecord({ source_id: 'overtaken' })
      const second = { ...first, price: 1_400_000, observed_at: '2026-03-05T00:00:00.000Z' }
      const slow = holdingFirstRead(store)
      const overtaken = ingestRecords(slow.store, [first, second], DEFAULT_FX)
      await slow.reached

      expect(await ingestRecords(store, [first], DEFAULT_FX)).toEqual({ new: 1, changed: 0, unchanged: 0 })
      slow.release()

      // It decided both lines on an empty listing; the first line's event is now recorded: it reads again.
      expect(await overtaken).toEqual({ new: 0, changed: 1, unchanged: 1 })
      expect(await typesIn('broker', 'overtaken')).toEqual(['ListingIngested', 'ListingPriceChanged'])
    })

    it('counts each listing of a batch once when another run changed one of them after this run read them', async () => {
      const lines = ['batch-a', 'batch-b', 'batch-c'].map((id) => aRecord({ source_id: id }))
      const slow = holdingFirstRead(store)
      const overtaken = ingestRecords(slow.store, lines, DEFAULT_FX)
      await slow.reached

      const newer = { ...lines[1]!, price: 1_400_000, observed_at: '2026-03-05T00:00:00.000Z' }
      expect(await ingestRecords(store, [newer], DEFAULT_FX)).toEqual({ new: 1, changed: 0, unchanged: 0 })
      slow.release()

      // The other two are this run's, whether the store wrote them with the batch (stream by stream) or not (all or nothing).
      expect(await overtaken).toEqual({ new: 2, changed: 0, unchanged: 1 })
      for (const id of ['batch-a', 'batch-b', 'batch-c']) expect(await typesIn('broker', id)).toEqual(['ListingIngested'])
    })

    it('stores the good lines of a file, reports each bad line with its number and stores nothing of it', async () => {
      const lines = [
        JSON.stringify(aLine({ source_id: 'file-1' })),
        '',
        JSON.stringify(aLine({ source_id: 'file-bad-country', country: 'MX' })),
        '{ not json',
        JSON.stringify(aLine({ source_id: 'file-2', source: 'scraped', broker: null })),
        JSON.stringify(aLine({ source_id: 'file-bad-broker', broker: null })),
        JSON.stringify(aLine({ source_id: 'file-1' })),
        JSON.stringify(aLine({ source_id: 'file-1', price: 1_000_000, observed_at: '2026-03-10T00:00:00Z' })),
      ]
      const path = join(dir, 'feed.ndjson')
      await writeFile(path, `\uFEFF${lines.join("\n")}\n`)
      const seen: Rejection[] = []
      const progress: IngestProgress[] = []
      const totalBytes = (await stat(path)).size
      // readline drops the lines it reads before the loop asks for them: nothing is awaited between the two.
      const input = createReadStream(path, { encoding: 'utf8' })
      const fileLines = createInterface({ input, crlfDelay: Infinity })
      const summary = await ingestLines(
        store,
        fileLines,
        { ...options, batchSize: 2, onRejected: (r) => seen.push(r), onProgress: (p) => progress.push(p) },
        totalBytes,
      )

      expect(summary).toMatchObject({ read: 7, new: 2, changed: 1, unchanged: 1, rejected: 3 })
      expect(summary.rejections.map((r) => [r.line, r.details.map((d) => d.field)])).toEqual([
        [3, ['country']],
        [4, ['(root)']],
        [6, ['broker']],
      ])
      expect(summary.rejections[0]!.reason).toMatch(/^line 3: country: must be one of/)
      expect(seen).toEqual(summary.rejections)
      expect(await typesIn('broker', 'file-bad-country')).toEqual([])
      expect(await typesIn('broker', 'file-bad-broker')).toEqual([])
      expect(await typesIn('scraped', 'file-2')).toEqual(['ListingIngested'])
      expect(await typesIn('broker', 'file-1')).toEqual(['ListingIngested', 'ListingPriceChanged'])
      const last = progress[progress.length - 1]!
      expect(last).toMatchObject({ read: 7, rejected: 3, bytesRead: last.totalBytes })
      expect(progress.map((p) => p.read)).toEqual([...progress.map((p) => p.read)].sort((a, b) => a - b))
    })

    it('gives lines without observed_at the time of the run', async () => {
      const { observed_at: _drop, ...line } = aLine({ source_id: 'no-observed-at' })
      const summary = await ingestLines(store, [JSON.stringify(line)], options)
      expect(summary).toMatchObject({ read: 1, new: 1, rejected: 0 })
      const [event] = await store.readStream(listingStream('broker', 'no-observed-at'))
      expect(event!.data.observed_at).toBe(NOW.toISOString())
    })
  })
}
