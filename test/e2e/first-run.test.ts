import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, describe, expect, test } from 'vitest'
import { isolatedDatabaseUrl } from '../support/databases.ts'
import { aLine } from '../support/market.ts'
import { type RunningServer, runCli, startServer, tempDataDir } from '../support/server.ts'

type Json = Record<string, any>

describe('first run: the CLI before the server, owners before the demo market, paths from where the user is', () => {
  const home = tempDataDir('mirador-first-run-')
  const dataDir = join(home, 'data')
  const env = { DATA_DIR: dataDir }
  let server: RunningServer
  let key = ''
  afterAll(() => server?.stop())

  test('without a store the CLI refuses and says what to do; with --init it creates one and says so', async () => {
    const refused = await runCli(['owner', 'create', '--id', 'acme-corp', '--tier', 'enterprise'], env)
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain(`no store in ${dataDir}`)
    expect(refused.stderr).toMatch(/npm start creates the store.*--init/)
    expect(existsSync(dataDir)).toBe(false)

    const created = await runCli(['--init', 'owner', 'create', '--id', 'acme-corp', '--tier', 'enterprise'], env)
    expect(created).toEqual({ code: 0, stdout: 'owner acme-corp: tier enterprise, active\n', stderr: `store: pglite ${dataDir} (created by --init)\n` })

    const issued = await runCli(['key', 'issue', '--owner', 'acme-corp', '--scopes', 'read', '--actor', 'acme-corp'], env)
    expect(issued.stderr).toBe(`store: pglite ${dataDir} (server not running)\n`)
    key = /mrd_[0-9A-Za-z]{38}/.exec(issued.stdout)![0]

    const help = await runCli(['key', 'issue', '--help'], env)
    expect(help.code).toBe(0)
    // Run as `bun src/cli.ts` (runCli), the usage names that, not npm.
    expect(help.stdout).toMatch(/^usage: bun src\/cli.ts key issue --owner ID/)
  })

  test('the first start seeds the demo market although owners exist; the CLI then works through the server', async () => {
    server = await startServer({ ...env, DEMO_SEED: 'on', DEMO_LISTINGS: '200' })
    expect(server.output()).toContain('"event":"demo_seeded"')
    const zones = (await (await fetch(`${server.url}/api/v1/zones?country=GT`, { headers: { authorization: `Bearer ${key}` } })).json()) as Json
    expect(zones.count).toBeGreaterThanOrEqual(12)
    const listed = await server.cli('key', 'list', '--owner', 'acme-corp')
    expect(listed.code).toBe(0)
    expect(listed.stderr).toBe(`store: pglite ${dataDir} via the server's socket ${join(dataDir, 'mirador.sock')}\n`)
    const json = await server.cli('key', 'list', '--owner', 'acme-corp', '--json')
    expect(json.stderr).toBe('') // --json: stderr carries only errors
    expect(JSON.parse(json.stdout)).toMatchObject({ owner_id: 'acme-corp', keys: [{ scopes: ['read'] }] })
  })

  test('relative file arguments are resolved from where the command was run (npm sets INIT_CWD), not from the repository root', async () => {
    const feeds = join(home, 'feeds')
    mkdirSync(feeds)
    writeFileSync(join(feeds, 'f.ndjson'), `${JSON.stringify(aLine({ source_id: 'first-run-1' }))}\n`)
    const run = await runCli(['ingest', 'f.ndjson'], { ...server.env, INIT_CWD: feeds })
    expect(run.stderr).not.toMatch(/error/)
    expect(run.code).toBe(0)
    expect(run.stdout).toContain(`${join(feeds, 'f.ndjson')}: read 1, new 1`)
  })
})

const databaseUrl = isolatedDatabaseUrl()
if (!databaseUrl) console.warn('[skipped] CLI store line on PostgreSQL: DATABASE_URL is not set')

test.runIf(databaseUrl)('on PostgreSQL the CLI names the database, never its password', async () => {
  const url = new URL(databaseUrl!)
  url.password = 'hunter2'
  const run = await runCli(['projections', 'status'], { DATABASE_URL: url.toString(), DATA_DIR: join(tempDataDir(), 'absent') })
  expect(run.code).toBe(0)
  url.password = '***'
  expect(run.stderr).toBe(`store: postgres ${url.toString()}\n`)
  expect(run.stderr).not.toContain('hunter2')
})
