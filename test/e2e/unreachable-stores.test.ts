import { describe, expect, test } from 'vitest'
import { freePort, runServerToExit, tempDataDir } from '../support/server.ts'

/**
 * A start against a store that does not answer (issue 28, item 6): one line on stderr that names the
 * store, says why (the cause, address included: this is the operator's terminal) and the setting to
 * check, and exit code 1. Port 1 on the loopback refuses every connection.
 */
describe('a server started against a store that does not answer', () => {
  test('PostgreSQL: names the read-model database, the refused connection and DATABASE_URL', async () => {
    const run = await runServerToExit({ DATA_DIR: tempDataDir(), PORT: String(await freePort()), DATABASE_URL: 'postgres://postgres@127.0.0.1:1/test' })
    expect(run.code).toBe(1)
    expect(run.stderr.trim().split('\n')).toEqual([
      'mirador: cannot start: the read-model database is unavailable (ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:1); check DATABASE_URL and that the server runs',
    ])
  })

  // Slow (~15 s): the KurrentDB client tries to connect several times before it gives up.
  test('KurrentDB: names the event store, the refused connection and ESDB_CONNECTION_STRING', async () => {
    const run = await runServerToExit({
      DATA_DIR: tempDataDir(),
      PORT: String(await freePort()),
      ESDB_CONNECTION_STRING: 'kurrentdb://127.0.0.1:1?tls=false&maxDiscoverAttempts=1&defaultDeadline=1000',
    })
    expect(run.code).toBe(1)
    const lines = run.stderr.trim().split('\n')
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(/^mirador: cannot start: the event store is unavailable \(KurrentDB is unreachable: .*ECONNREFUSED 127\.0\.0\.1:1\.?\); check ESDB_CONNECTION_STRING and that the server runs$/)
  }, 90_000)
})
