import { readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { describe, expect, test } from 'vitest'

const ROOT = resolve(import.meta.dirname, '../..')
const read = (name: string) => readFileSync(join(ROOT, name), 'utf8')

/** .dockerignore patterns (comments, blanks and "!" exceptions aside: ours has none). */
const patterns = read('.dockerignore')
  .split('\n')
  .map((line) => line.trim())
  .filter((line) => line && !line.startsWith('#'))

/**
 * Docker's rule: a pattern is a path glob from the context root (`*` within one path segment, `**`
 * across segments), and a path is left out when the pattern matches it or one of its parent folders.
 */
function ignored(path: string): boolean {
  const regexes = patterns.map(
    (p) => new RegExp(`^${p.replace(/^\//, '').replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*\*\/?/g, '\u0000').replace(/\*/g, '[^/]*').replace(/\?/g, '[^/]').replace(/\u0000/g, '.*')}$`),
  )
  const segments = path.split('/')
  return segments.some((_, i) => regexes.some((r) => r.test(segments.slice(0, i + 1).join('/'))))
}

/** Sources of the Dockerfile's COPY instructions from the build context (not from another stage). */
const copied = read('Dockerfile')
  .split('\n')
  .filter((line) => /^COPY\s/.test(line) && !/--from=/.test(line))
  .flatMap((line) => line.split(/\s+/).slice(1).filter((word) => !word.startsWith('--')).slice(0, -1))

describe('.dockerignore and the Dockerfile agree', () => {
  test('everything the image copies is in the build context', () => {
    expect(copied).toEqual(expect.arrayContaining(['package.json', 'package-lock.json', 'src', 'projections']))
    for (const source of copied) expect(ignored(source), source).toBe(false)
    for (const file of ['src/main.ts', 'src/cli.ts', 'projections/runner.ts']) expect(ignored(file), file).toBe(false)
  })

  test('dependencies, data, history, benchmarks\' scratch files, tests and secrets stay out', () => {
    for (const path of ['node_modules/elysia/package.json', 'data/pglite/PG_VERSION', 'data/mirador.sock', '.git/HEAD', 'bench/.tmp/feed.ndjson', 'test/e2e/server.test.ts', '.env', '.env.local', 'vitest.log', '.vitest-results.json']) {
      expect(ignored(path), path).toBe(true)
    }
  })
})
