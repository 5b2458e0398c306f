import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, describe, expect, test } from 'vitest'
import { BATCH_GUARANTEES, batchesEnv } from '../support/databases.ts'
import { initialisedDataDir, runCli, type RunningServer, startServer, tempDataDir } from '../support/server.ts'

for (const batches of BATCH_GUARANTEES) {
  describe(`events export / import with the real CLI and server (embedded store, through the operator socket; batches ${batches})`, () => {
    let server: RunningServer
    afterAll(async () => {
      await server?.stop()
    })

    // Slow on purpose: a dozen CLI processes (export, import into fresh stores, refusals), over a minute on a busy machine.
    test('exports the running server’s log, imports it into a fresh store, refuses a different history', async () => {
      const dataDir = initialisedDataDir()
      server = await startServer({ DATA_DIR: dataDir, DEMO_SEED: 'on', DEMO_LISTINGS: '112', ...batchesEnv(batches) })
      expect(server.output()).toMatch(`"event":"event_store","events":"pglite","server_version":null,"batches":"${batches}"`)
      const file = join(tempDataDir('mirador-export-'), 'events.ndjson')

      const exported = await server.cli('events', 'export', '--out', file)
      expect(exported.code).toBe(0)
      const events = Number(/exported (\d+) events to /.exec(exported.stdout)?.[1])
      expect(events).toBeGreaterThan(112)
      const text = await readFile(file, 'utf8')
      const lines = text.trimEnd().split('\n')
      expect(lines).toHaveLength(events + 2)

      // To stdout: the same lines (the header's time aside); the summary goes to stderr.
      const piped = await server.cli('events', 'export')
      expect(piped.code).toBe(0)
      expect(piped.stdout.trimEnd().split('\n').slice(1)).toEqual(lines.slice(1))
      expect(piped.stderr).toMatch(`exported ${events} events to stdout`)

      // Into the store it came from (over the socket): everything is already there.
      const same = await server.cli('events', 'import', file)
      expect(same).toMatchObject({ code: 0 })
      expect(same.stdout).toMatch(`${events} events, 0 imported, ${events} already present`)

      // Into a fresh embedded store, with no server running: the CLI creates it (--init) and opens it itself.
      const copy = await runCli(['events', 'import', file, '--init'], { DATA_DIR: tempDataDir(), ...batchesEnv(batches) })
      expect(copy.code).toBe(0)
      expect(copy.stdout).toMatch(`${events} events, ${events} imported, 0 already present`)

      // A file whose first event differs from the server's: refused, exit 1, one clear line.
      const first = JSON.parse(lines[1]!)
      const altered = join(tempDataDir('mirador-export-'), 'altered.ndjson')
      await writeFile(altered, [lines[0], JSON.stringify({ ...first, data: { ...first.data, altered: true } }), ...lines.slice(2), ''].join('\n'))
      const refused = await server.cli('events', 'import', altered)
      expect(refused.code).toBe(1)
      expect(refused.stderr).toMatch(/^error \(conflict\): line 2: the store holds a different event here/m)

      expect((await server.cli('events', 'import')).code).toBe(2)
      expect((await server.cli('events', 'import', join(dataDir, 'missing.ndjson'))).code).toBe(2)
    }, 180_000)
  })
}
