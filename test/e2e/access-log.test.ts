import { afterAll, describe, expect, test } from 'vitest'
import { initialisedDataDir, type RunningServer, startServer } from '../support/server.ts'

/**
 * The access log is written in batches: a normal shutdown must still write every line, each one
 * JSON object on its own line. The requests are answered and the server is stopped at once, well
 * within the time lines wait in memory.
 */
describe.each(['SIGTERM', 'SIGINT'] as const)('the access log of the real server stopped with %s', (signal) => {
  let server: RunningServer | undefined
  afterAll(() => server?.stop())

  test('every answered request has its line, none lost at shutdown, one JSON object per line', async () => {
    server = await startServer({ DATA_DIR: initialisedDataDir(), ACCESS_LOG: 'on' })
    const ids = Array.from({ length: 300 }, (_, i) => `log-${signal}-${i}`)
    const statuses = await Promise.all(
      ids.map(async (id) => (await fetch(`${server!.url}/api/v1/health`, { headers: { 'x-request-id': id } })).status),
    )
    expect(new Set(statuses)).toEqual(new Set([401]))
    await server.stop(signal)

    const stdout = server.output().split('\n').filter((line) => line.startsWith('{'))
    const entries = stdout.map((line) => JSON.parse(line) as Record<string, unknown>)
    const logged = entries.filter((entry) => entry.event === 'request' && String(entry.request_id).startsWith(`log-${signal}-`))
    expect(logged.map((entry) => entry.request_id).sort()).toEqual([...ids].sort())
    expect(logged.every((entry) => entry.method === 'GET' && entry.path === '/api/v1/health' && entry.status === 401)).toBe(true)
    expect(entries).toContainEqual(expect.objectContaining({ event: 'stopping', signal }))
    expect(entries.at(-1)).toMatchObject({ event: 'stopped', signal })
  })
})
