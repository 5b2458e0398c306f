import { execFile, spawn } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { basename, join, resolve } from 'node:path'
import { afterAll, describe, expect, test } from 'vitest'
import { eventually } from '../support/eventually.ts'
import { type RunningServer, runCli, runProgram, startServer, tempDataDir } from '../support/server.ts'

/**
 * The README's examples, run as written against the real server on a fresh data directory (so on
 * the default demo market): every line of a ```sh block that runs the CLI through npm (`npm run … cli
 * --`, `npx mirador`) or starts with `curl`, each in a shell from the repository root, as a user types
 * it. Placeholders are filled in from what the commands print: `mrd_…` and `$KEY` with the issued key,
 * `key_…` with its id, `localhost:8080` with the test server; files the examples write (`--out FILE`,
 * `> FILE`) go to a temporary directory instead of the repository. Commands that take a key out of
 * service (revoke, deactivate) run last, so that the others can use it.
 */
const ROOT = resolve(import.meta.dirname, '../..')
const README = readFileSync(join(ROOT, 'README.md'), 'utf8')

/** Lines of ```sh blocks, continuation lines (`\` at the end) joined, comments and prompts dropped. */
function shellLines(markdown: string): string[] {
  const blocks = [...markdown.matchAll(/^```sh\n([\s\S]*?)^```/gm)].map((m) => m[1]!)
  return blocks.flatMap((block) =>
    block
      .replace(/\\\n\s*/g, ' ')
      .split('\n')
      .map((line) => line.replace(/\s+#\s.*$/, '').trim())
      .filter(Boolean),
  )
}

const lines = shellLines(README)
const cliLines = lines.filter((l) => /^(npm run (-s |--silent )?cli -- |npx mirador )/.test(l))
const curlLines = lines.filter((l) => l.startsWith('curl '))
const retiresTheKey = (line: string) => / (key revoke|owner deactivate) /.test(line)

type Json = Record<string, any>

/** The files a CLI line writes: `--out FILE` or a redirection of its stdout, `> FILE`. */
const writtenFiles = (line: string) => [...line.matchAll(/(?:--out\s+|>\s*)([^\s>|&;]+)/g)].map((m) => m[1]!)
/** What npm prints on stdout before a script's output unless run with -s: `> mirador@1.0.0 cli`, `> bun src/cli.ts`. */
const NPM_BANNER = /^> \S+@\S+ \S+$/m

function curl(line: string): Promise<{ status: number; headers: string; body: string }> {
  // -sS: no progress meter; -w: the status on a last line of its own.
  const command = line.replace(/^curl /, `curl -sS -w '\\n%{http_code}' `)
  return new Promise((done, fail) =>
    execFile('bash', ['-c', command], { timeout: 30_000 }, (error, stdout, stderr) => {
      if (error) return fail(new Error(`${line}\n${stderr || error.message}`))
      const status = Number(stdout.slice(stdout.lastIndexOf('\n') + 1))
      let text = stdout.slice(0, stdout.lastIndexOf('\n'))
      let headers = ''
      if (text.startsWith('HTTP/')) {
        const split = text.indexOf('\r\n\r\n')
        headers = text.slice(0, split)
        text = text.slice(split + 4)
      }
      done({ status, headers, body: text })
    }),
  )
}

/** "Returns data": ok, and every list in the answer is non-empty (zones, listings, personas, …). */
function expectData(line: string, body: Json) {
  expect(body.ok, line).toBe(true)
  for (const [field, value] of Object.entries(body)) {
    if (Array.isArray(value)) expect(value.length, `${line}: ${field}`).toBeGreaterThan(0)
  }
  for (const field of ['count', 'total', 'n_active']) {
    if (field in body) expect(body[field], `${line}: ${field}`).toBeGreaterThan(0)
  }
}

describe('the README, run as written against the real server on the demo market', () => {
  let server: RunningServer
  let key = ''
  let keyId = ''
  afterAll(() => server?.stop())
  const scratch = tempDataDir('mirador-readme-files-')
  /** The files the examples wrote (in `scratch`), by the name the README gives them. */
  const written = new Map<string, string>()

  const fill = (line: string) =>
    [...written].reduce(
      (filled, [name, path]) => filled.replace(new RegExp(`(?<=[\\s>])${name.replace(/\./g, '\\.')}(?=\\s|$)`, 'g'), path),
      line
        .replaceAll('mrd_…', key)
        .replaceAll('$KEY', key)
        .replaceAll('key_…', keyId)
        .replaceAll('localhost:8080', `127.0.0.1:${server.port}`),
    )

  /**
   * Runs `line` as written in a shell from the repository root; its stdout must be the CLI's alone
   * (no npm banner), and parse as JSON with --json.
   */
  async function cli(line: string) {
    for (const name of writtenFiles(line)) written.set(name, join(scratch, basename(name)))
    const result = await runProgram('bash', ['-c', fill(line)], server.env)
    expect(result.code, `${line}\n${result.stderr}`).toBe(0)
    expect(result.stdout, line).not.toMatch(NPM_BANNER)
    if (/ --json\b/.test(line)) expect(() => JSON.parse(result.stdout), `${line}\n${result.stdout}`).not.toThrow()
    return result
  }

  test('the README has examples to run: a first run with the CLI and a call of every endpoint', () => {
    expect(cliLines.some((l) => l.includes(' key issue '))).toBe(true)
    for (const path of ['/health', '/zones', '/zone/', '/listings', '/briefings/personas', '/briefings/investor']) {
      expect(curlLines.some((l) => l.includes(`/api/v1${path}`)), path).toBe(true)
    }
  })

  // Slow on purpose: a demo-seeded first start, then every CLI example of the README as its own process (over a minute on a busy machine).
  test('every CLI example succeeds, in order, on the store of a freshly started server', async () => {
    server = await startServer({ DATA_DIR: tempDataDir(), DEMO_SEED: 'on' })
    for (const line of cliLines.filter((l) => !retiresTheKey(l))) {
      const result = await cli(line)
      const issued = /(mrd_[0-9A-Za-z]{38})/.exec(result.stdout)
      if (issued) {
        key = issued[1]!
        keyId = /(key_[0-9A-Za-z]{12})/.exec(result.stdout)![1]!
      }
    }
    expect(key).not.toBe('')
  }, 180_000)

  test('the --json examples print one JSON document; the exports are files that events import takes into an empty store', async () => {
    const json = cliLines.filter((l) => / --json\b/.test(l))
    // Exports to stdout, redirected to a file: what npm's banner broke (--out files never pass through npm).
    const exports = cliLines.filter((l) => / events export\b.* > ?\S/.test(l))
    expect(json.length).toBeGreaterThan(0)
    expect(exports.length).toBeGreaterThan(0)
    for (const line of exports) {
      const file = written.get(writtenFiles(line)[0]!)!
      expect(JSON.parse(readFileSync(file, 'utf8').split('\n')[0]!), line).toMatchObject({ format: 'mirador-events' })
      const restored = await runCli(['--init', 'events', 'import', file], { DATA_DIR: tempDataDir('mirador-readme-restore-') })
      expect(restored.code, `${line}\n${restored.stderr}`).toBe(0)
    }
  })

  test('every curl example returns data', async () => {
    for (let i = 0; i < 100; i++) {
      if ((await curl(fill('curl -H "Authorization: Bearer $KEY" localhost:8080/api/v1/health'))).status === 200) break
      await new Promise((r) => setTimeout(r, 50))
    }
    for (const line of curlLines) {
      const { status, body } = await curl(fill(line))
      expect(status, `${line}\n${body}`).toBe(200)
      expectData(line, JSON.parse(body) as Json)
    }
    // The idempotent example, sent again, replays the first answer.
    const idempotent = curlLines.find((l) => /Idempotency-Key/i.test(l))
    if (idempotent) {
      const again = await curl(fill(idempotent.includes(' -i ') ? idempotent : idempotent.replace(/^curl /, 'curl -i ')))
      expect(again.headers).toMatch(/idempotent-replayed: true/i)
    }
  })

  test('the sync loop, run as written: exports once, then writes each change after the cursor (a listing ingested meanwhile)', async (ctx) => {
    const block = /^```sh sync\n([\s\S]*?)^```/m.exec(README)?.[1]
    expect(block, 'the README shows a sync loop').toBeDefined()
    if (!(await runProgram('bash', ['-c', 'command -v jq'], server.env)).stdout.trim()) {
      console.warn('[skipped] the README sync loop: jq is not installed')
      return ctx.skip()
    }
    const dir = tempDataDir('mirador-readme-sync-')
    const loop = spawn('bash', ['-c', fill(block!)], { cwd: dir, stdio: 'ignore', detached: true })
    try {
      await eventually('the export is written', async () => existsSync(join(dir, 'page.json')))
      expect(readFileSync(join(dir, 'cr.ndjson'), 'utf8').trimEnd().split('\n').at(-1)).toMatch(/^\{"cursor":"c1\.[A-Za-z0-9_-]+","count":\d+\}$/)
      const feed = join(scratch, 'sync-line.ndjson')
      const line = { source: 'broker', source_id: 'readme-sync-1', country: 'CR', zone: 'Zona 2', operation: 'Venta', property_type: 'Casa', price: 250_000, currency: 'USD', area_m2: 120, bedrooms: 3, bathrooms: 2, title: 'Casa README', broker: { id: 'readme', name: 'README' }, url: null, listed_at: '2026-11-01T00:00:00Z', verified_at: '2026-11-01T00:00:00Z', status: 'active' }
      writeFileSync(feed, `${JSON.stringify(line)}\n`)
      expect((await server.cli('ingest', feed)).code).toBe(0)
      const written = () => (existsSync(join(dir, 'cr-changes.ndjson')) ? readFileSync(join(dir, 'cr-changes.ndjson'), 'utf8') : '')
      await eventually('the new listing is among the changes written', async () => written().includes('"title":"Casa README"'), 15_000)
      expect(JSON.parse(written().trimEnd().split('\n').at(-1)!)).toMatchObject({ kind: 'listed', listing: { title: 'Casa README', country: 'CR' } })
    } finally {
      process.kill(-loop.pid!, 'SIGKILL')
    }
  })

  test('the examples that retire the key do so: its next request is 401 invalid_key', async () => {
    const retiring = cliLines.filter(retiresTheKey)
    for (const line of retiring) await cli(line)
    if (retiring.length === 0) return
    let last = { status: 0, body: '' }
    for (let i = 0; i < 40 && last.status !== 401; i++) {
      last = await curl(fill('curl -H "Authorization: Bearer $KEY" localhost:8080/api/v1/health'))
      if (last.status !== 401) await new Promise((r) => setTimeout(r, 50))
    }
    expect(last.status).toBe(401)
    expect(JSON.parse(last.body)).toMatchObject({ ok: false, error: 'invalid_key' })
  })
})
