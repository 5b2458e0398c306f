import { expect, test } from 'vitest'
import { openPglite } from '../../src/db/pglite.ts'
import { embeddedStoreDir } from '../../src/storage.ts'
import { initialisedDataDir, runCli } from '../support/server.ts'

/** `audit verify` as an operator runs it: the CLI on an embedded store, its output and exit codes, before and after an edit of the events table. */
test('audit verify: exit 0 and the head digest on a whole log; exit 1 naming the position and stream an edit of the table touched, and for a recorded digest the log no longer gives', async () => {
  const env = { DATA_DIR: initialisedDataDir('mirador-verify-'), npm_lifecycle_event: '' }
  for (const id of ['acme-corp', 'globex']) expect((await runCli(['owner', 'create', '--id', id, '--tier', 'pro'], env)).code).toBe(0)

  const whole = await runCli(['audit', 'verify'], env)
  expect(whole.code, whole.stderr).toBe(0)
  expect(whole.stdout).toMatch(/^whole: 2 events verified \(global chain\), head 2:[0-9a-f]{16}\n$/)
  const head = await runCli(['audit', 'verify', '--head'], env)
  expect(head.stdout).toMatch(/^2:[0-9a-f]{16}\n$/)
  const recorded = head.stdout.trim()
  expect((await runCli(['audit', 'verify', '--expect', recorded], env)).code).toBe(0)

  const db = await openPglite(embeddedStoreDir(env.DATA_DIR))
  await db.query(`update mirador_events set data = jsonb_set(data, '{tier}', '"enterprise"') where global_position = 1`)
  await db.close()

  const tampered = await runCli(['audit', 'verify'], env)
  expect(tampered.code).toBe(1)
  expect(tampered.stdout).toBe('NOT WHOLE: position 1 (OwnerRegistered in stream owner-acme-corp at revision 0) does not chain on position 0: it was altered, inserted or moved\n')
  const expected = await runCli(['audit', 'verify', '--expect', recorded], env)
  expect(expected.code).toBe(1)
  expect(expected.stdout).toContain(`EXPECTED DIGEST DIFFERS: the log gives 2:`)
  expect((await runCli(['audit', 'verify', '--expect', 'last-tuesday'], env)).code).toBe(2)
}, 120_000)
