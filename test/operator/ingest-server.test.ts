import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { LONG_FEED, rejectionLines, writeLongFeed } from '../support/feed-files.ts'
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
})
