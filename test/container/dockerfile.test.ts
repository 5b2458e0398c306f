import { readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { describe, expect, test } from 'vitest'

/**
 * The Dockerfile cannot be built here (no Docker engine): it is read as Docker and npm would read
 * it. Which packages `npm ci` installs is computed from package-lock.json with npm's own rule for
 * `--omit` (a package is left out when it is only in the omitted trees: `dev`, `optional`, `peer`,
 * or `devOptional` when both dev and optional are omitted).
 */
const ROOT = resolve(import.meta.dirname, '../..')
const read = (name: string) => readFileSync(join(ROOT, name), 'utf8')

/** The Dockerfile's stages: `FROM image AS name` and the instructions up to the next FROM (continuations joined). */
const stages = read('Dockerfile')
  .replace(/\\\n/g, ' ')
  .split('\n')
  .filter((line) => line.trim() && !line.trim().startsWith('#'))
  .reduce<{ from: string; name: string; lines: string[] }[]>((all, line) => {
    const from = /^FROM\s+(\S+)(?:\s+AS\s+(\S+))?/i.exec(line)
    if (from) return [...all, { from: from[1]!, name: from[2] ?? '', lines: [] }]
    all.at(-1)!.lines.push(line.trim())
    return all
  }, [])
const deps = stages.find((stage) => stage.name === 'deps')!
const runtime = stages.at(-1)!

type LockEntry = { dev?: boolean; optional?: boolean; devOptional?: boolean; peer?: boolean }
const lock = JSON.parse(read('package-lock.json')).packages as Record<string, LockEntry>

/** The package folders left in node_modules after the deps stage's `npm ci … && rm -rf …`. */
function installedByDepsStage(): string[] {
  const run = deps.lines.find((line) => /^RUN npm ci\b/.test(line))!
  const omit = new Set([...run.matchAll(/--omit=(\w+)/g)].map((m) => m[1]!))
  const removed = [...run.matchAll(/rm -rf ((?:\S+\s*)+)/g)].flatMap((m) => m[1]!.split(/\s+/).filter(Boolean))
  return Object.entries(lock)
    .filter(([path]) => path.startsWith('node_modules/'))
    .filter(([, p]) => !(p.dev && omit.has('dev')) && !(p.optional && omit.has('optional')) && !(p.peer && omit.has('peer')))
    .filter(([, p]) => !(p.devOptional && omit.has('dev') && omit.has('optional')))
    .map(([path]) => path)
    .filter((path) => !removed.some((gone) => path === gone || path.startsWith(`${gone}/`)))
}

const major = (image: string) => Number(/^node:(\d+)/.exec(image)?.[1])

describe('the Dockerfile', () => {
  test('installs the dependencies with the npm of a Node LTS of 22 or later', () => {
    expect(deps.from).toMatch(/^node:\d+-/)
    expect(major(deps.from)).toBeGreaterThanOrEqual(22)
    // Even majors are the LTS lines.
    expect(major(deps.from) % 2).toBe(0)
  })

  test('puts the production tree in the image, and nothing of the dev tree: no TypeScript', () => {
    const installed = installedByDepsStage()
    expect(installed).not.toContain('node_modules/typescript')
    expect(installed.filter((path) => lock[path]!.dev || lock[path]!.devOptional)).toEqual([])
    // What it removes by name is devOptional only, never something the server needs.
    const run = deps.lines.find((line) => /^RUN npm ci\b/.test(line))!
    for (const gone of /rm -rf (.*)$/.exec(run)![1]!.split(/\s+/)) expect(lock[gone], gone).toMatchObject({ devOptional: true })
    for (const needed of ['node_modules/elysia', 'node_modules/@electric-sql/pglite', 'node_modules/@kurrent/kurrentdb-client', 'node_modules/@kurrent/bridge-linux-x64-gnu']) {
      expect(installed).toContain(needed)
    }
  })

  test('declares no VOLUME (PostgreSQL-backed containers would each get an anonymous one)', () => {
    expect(stages.flatMap((stage) => stage.lines).filter((line) => /^VOLUME\b/i.test(line))).toEqual([])
  })

  test('runs the server and the CLI with Bun, with no npm in the image: the CLI\'s usage names `bun src/cli.ts` there', () => {
    expect(runtime.from).toMatch(/^oven\/bun:/)
    expect(runtime.lines).toContain('CMD ["bun", "src/main.ts"]')
    expect(runtime.lines.join('\n')).not.toMatch(/\bnpm\b/)
  })

  test('its health check asks /readyz, which needs no key and turns 503 while a dependency is away', () => {
    const check = runtime.lines.find((line) => /^HEALTHCHECK\b/.test(line))!
    expect(check).toMatch(/\/readyz'/)
    expect(check).toMatch(/r\.status === 200 \? 0 : 1/)
    expect(check).not.toMatch(/\/api\/v1\/health/)
  })
})

describe('Node ≥ 22 everywhere', () => {
  test('package.json engines, @types/node, the README and the Dockerfile agree', () => {
    const pkg = JSON.parse(read('package.json'))
    expect(pkg.engines.node).toBe('>=22')
    expect(Number(/\d+/.exec(pkg.devDependencies['@types/node'])![0])).toBeGreaterThanOrEqual(22)
    expect(read('README.md')).toContain('Needs Node.js ≥ 22')
    expect(read('README.md')).not.toMatch(/Node(\.js)? ≥ 20/)
    expect(major(deps.from)).toBeGreaterThanOrEqual(22)
  })
})
