import { join } from 'node:path'
import { describe, expect, test } from 'vitest'
import { initialisedDataDir, runCli, tempDataDir } from '../support/server.ts'

/**
 * The CLI as a process meets a mistyped command line: what it suggests, its exit code, and which of
 * its lines on stderr are coloured (errors only, and only when colours are wanted).
 */
const ESC = '\x1b['
// Not run by npm: the usage lines name `bun src/cli.ts`.
const direct = { npm_lifecycle_event: '' }

describe('the CLI, mistyped', () => {
  const home = tempDataDir('mirador-typos-')

  test.each([
    [['owner', 'craete', '--id', 'acme', '--tier', 'pro'], 'unknown command "owner craete"; did you mean "owner create"?'],
    [['onwer', 'create', '--id', 'acme'], 'unknown command "onwer create"; did you mean "owner create"?'],
    [['ingset', 'feed.ndjson'], 'unknown command "ingset feed.ndjson"; did you mean "ingest"?'],
    [['owner', 'create', '--id', 'acme', '--tire', 'pro'], '"owner create" has no option --tire; did you mean --tier?'],
    [['key', 'list', '--ownr', 'acme'], '"key list" has no option --ownr; did you mean --owner?'],
    [['projections', 'status', '--jsno'], '"projections status" has no option --jsno; did you mean --json?'],
  ])('%j: a suggestion, exit code 2, before any store is opened', async (args, first) => {
    const result = await runCli(args, { ...direct, DATA_DIR: join(home, 'none') })
    expect(result.code).toBe(2)
    expect(result.stderr.split('\n')[0]).toBe(first)
    expect(result.stderr).toContain('\n\nusage: bun src/cli.ts ')
    expect(result.stdout).toBe('')
  })

  test('nothing close: no suggestion', async () => {
    const result = await runCli(['frobnicate'], { ...direct, DATA_DIR: join(home, 'none') })
    expect(result.code).toBe(2)
    expect(result.stderr.split('\n')[0]).toBe('unknown command "frobnicate"')
  })

  test('the store line is never coloured; errors are red only when colours are wanted (FORCE_COLOR, a terminal), never with NO_COLOR', async () => {
    const dataDir = initialisedDataDir('mirador-colour-')
    // Bun colours every console.error line red when colours are on: FORCE_COLOR turns them on through a pipe.
    const ok = await runCli(['projections', 'status'], { ...direct, DATA_DIR: dataDir, FORCE_COLOR: '1' })
    expect(ok.code, ok.stderr).toBe(0)
    expect(ok.stderr).toMatch(/^store: pglite /m)
    expect(ok.stderr).not.toContain(ESC)

    const refused = await runCli(['key', 'list', '--owner', 'nobody-q9'], { ...direct, DATA_DIR: dataDir, FORCE_COLOR: '1' })
    expect(refused.code).toBe(1)
    const [store, error] = refused.stderr.split('\n')
    expect(store).toMatch(/^store: pglite [^\x1b]*$/)
    expect(error).toMatch(/^\x1b\[31merror \(not_found\): .*\x1b\[0m$/)

    const typo = await runCli(['owner', 'craete'], { ...direct, DATA_DIR: dataDir, FORCE_COLOR: '1' })
    expect(typo.stderr).toMatch(/^\x1b\[31munknown command "owner craete"; did you mean "owner create"\?\x1b\[0m\n\nusage: [^\x1b]*$/)

    // NO_COLOR wins over FORCE_COLOR; and a pipe without either (empty counts as unset) gets no colour.
    for (const env of [{ NO_COLOR: '1', FORCE_COLOR: '1' }, { NO_COLOR: '', FORCE_COLOR: '' }]) {
      const plain = await runCli(['key', 'list', '--owner', 'nobody-q9'], { ...direct, DATA_DIR: dataDir, ...env })
      expect(plain.code).toBe(1)
      expect(plain.stderr).not.toContain(ESC)
      expect(plain.stderr).toMatch(/^error \(not_found\): /m)
    }
    const json = await runCli(['key', 'list', '--owner', 'nobody-q9', '--json'], { ...direct, DATA_DIR: dataDir, FORCE_COLOR: '1' })
    expect(JSON.parse(json.stderr)).toMatchObject({ ok: false, error: 'not_found' })
  })
})
