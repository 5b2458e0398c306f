import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { LONG_FEED, rejectionLines, writeLongFeed } from '../support/feed-files.ts'
import { aLine } from '../support/market.ts'
import { initialisedDataDir, type RunningServer, startServer } from '../support/server.ts'

/**
 * `ingest FILE` against a running server: the server holds the embedded store's lock, so the CLI
 * sends the file's lines over the server's socket in batches of 500.
 */
describe('ingest through a running server', () => {
  let server: RunningServer
  let dir: string
  beforeAll(async () => {
    dir = initialisedDataDir()
    server = await startServer({ DATA_DIR: dir })
  })
  afterAll(() => server?.stop())

  test('names every bad line by its number in the file, past the first 500 lines too', async () => {
    const result = await server.cli('ingest', writeLongFeed(dir), '--json')
    expect(result.code, result.stderr).toBe(1)
    expect(rejectionLines(result.stderr)).toEqual(LONG_FEED.rejections)
    expect(JSON.parse(result.stdout)).toMatchObject(LONG_FEED.summary)
  })

  test('refuses a line observed an hour ahead of the clock, by its number; a line a minute ahead is taken', async () => {
    const file = join(dir, 'future.ndjson')
    const ahead = (minutes: number) => new Date(Date.now() + minutes * 60_000).toISOString()
    const lines = [aLine({ source_id: 'cli-hour-ahead', observed_at: ahead(60) }), aLine({ source_id: 'cli-minute-ahead', observed_at: ahead(1) })]
    writeFileSync(file, `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`)
    const result = await server.cli('ingest', file, '--json')
    expect(result.code, result.stderr).toBe(1)
    expect(rejectionLines(result.stderr)).toEqual([
      expect.stringMatching(/^line 1: observed_at: is in the future \(more than 5 minutes after the time of the run, \d{4}-\d\d-\d\dT[\d:.]+Z\)$/),
    ])
    expect(JSON.parse(result.stdout)).toMatchObject({ read: 2, new: 1, rejected: 1 })
  })
})
