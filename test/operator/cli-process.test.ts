import { existsSync, statSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { beforeAll, describe, expect, test } from 'vitest'
import { BUN, type CliResult, initialisedDataDir, runCli, runProgram, tempDataDir } from '../support/server.ts'

/** The CLI as a newcomer meets it: a process, its exit code, what it prints. */
const ROOT = resolve(import.meta.dirname, '../..')

/** `command` in a shell from the repository root, with `env` added (DATABASE_URL and the like removed, npm's run name too). */
const shell = (command: string, env: Record<string, string>): Promise<CliResult> => runProgram('bash', ['-c', command], { npm_lifecycle_event: '', ...env })

describe('the CLI process', () => {
  const home = tempDataDir('mirador-cli-')
  // Not run by npm: the usage lines name `bun src/cli.ts`, as in the Docker image.
  const direct = { npm_lifecycle_event: '' }

  test('a usage error prints what is wrong and that command\'s own help, whole; the usage names how the CLI was run', async () => {
    const env = { ...direct, DATA_DIR: join(home, 'usage') }
    const refused = await runCli(['key', 'issue', '--owner', 'acme', '--bogus'], env)
    expect(refused.code).toBe(2)
    const help = await runCli(['key', 'issue', '--help'], env)
    expect(refused.stderr).toBe(`"key issue" has no option --bogus\n\n${help.stdout}`)
    expect(help.stdout).toMatch(/^usage: bun src\/cli\.ts key issue --owner ID /)
    expect(refused.stderr).not.toContain('owner create')
    expect(refused.stderr).not.toContain('npm')

    const viaNpm = await shell('npm run --silent cli -- key issue --bogus', { DATA_DIR: join(home, 'usage') })
    expect(viaNpm.code).toBe(2)
    expect(viaNpm.stderr).toContain('"key issue" has no option --bogus\n\nusage: npm run -s cli -- key issue --owner ID ')
    expect(existsSync(join(home, 'usage'))).toBe(false)
  }, 60_000)

  test('npx mirador (the package\'s bin) runs the CLI from any folder of the repository; its stdout is the CLI\'s alone', async () => {
    // --no: never fetch a registry package of that name if the bin were missing (that is the failure).
    const env = { DATA_DIR: initialisedDataDir('mirador-cli-bin-') }
    const help = await shell('cd docs && npx --no mirador key issue --help', env)
    expect(help.code, help.stderr).toBe(0)
    expect(help.stdout).toMatch(/^usage: npx mirador key issue --owner ID /)
    // Options after the command: npx takes those right after the bin's name for itself (--json, --help, --init).
    const created = await shell('cd docs && npx --no mirador owner create --id acme-corp --tier pro --json', env)
    expect(created.code, created.stderr).toBe(0)
    expect(JSON.parse(created.stdout)).toMatchObject({ owner: { owner_id: 'acme-corp', tier: 'pro' } })
    const refused = await shell('npx --no mirador owner create --id acme-corp --tier pro', env)
    expect(refused.code).toBe(1)
    expect(refused.stdout).toBe('')
  }, 60_000)

  test('--init with an invalid owner id exits 2 before creating the store, and says what an id is in words', async () => {
    const dataDir = join(home, 'invalid')
    const refused = await runCli(['--init', 'owner', 'create', '--id', 'X', '--tier', 'pro'], { ...direct, DATA_DIR: dataDir })
    expect(refused.code).toBe(2)
    expect(refused.stderr.split('\n')[0]).toBe(
      `"owner create": --id: Expected an owner id: 2–63 characters, lower-case letters, digits, '_', '.', '-', starting with a letter or digit (e.g. acme-corp)`,
    )
    expect(refused.stderr).not.toMatch(/\^\[a-z0-9\]/)
    expect(existsSync(dataDir)).toBe(false)
  })

  describe('on a store made by --init', () => {
    const dataDir = join(home, 'store')
    const env = { ...direct, DATA_DIR: dataDir }
    beforeAll(async () => {
      expect((await runCli(['--init', 'demo', 'seed'], env)).code).toBe(0)
    }, 120_000)

    test('--init creates DATA_DIR 0700, as the server does', () => {
      expect(statSync(dataDir).mode & 0o777).toBe(0o700)
    })

    test('ingest of a file that is not there says so, with the path it looked at', async () => {
      const missing = await runCli(['ingest', 'missing.ndjson'], env)
      expect(missing.code).toBe(2)
      expect(missing.stderr).toContain(`error (invalid_request): no such file: ${join(ROOT, 'missing.ndjson')}\n`)
      const directory = await runCli(['ingest', home], env)
      expect(directory.stderr).toContain(`error (invalid_request): ${home} is a directory: give the path of a file\n`)
      const importing = await runCli(['events', 'import', 'missing.ndjson'], env)
      expect(importing.stderr).toContain(`no such file: ${join(ROOT, 'missing.ndjson')}\n`)
    })

    test('events export | head: the export stops quietly when the reader has enough, exit 0', async () => {
      const piped = await shell(`"${BUN}" src/cli.ts events export 2>"${home}/export.err" | head -n 1; echo "exit \${PIPESTATUS[0]}"; cat "${home}/export.err"`, { DATA_DIR: dataDir })
      const [first, exit, ...stderr] = piped.stdout.split('\n')
      expect(JSON.parse(first!)).toMatchObject({ format: 'mirador-events' })
      expect(exit).toBe('exit 0')
      expect(stderr.join('\n')).not.toMatch(/EPIPE|error/)
    }, 60_000)
  })
})
