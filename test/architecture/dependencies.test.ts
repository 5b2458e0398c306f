import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { cruise, type IViolation } from 'dependency-cruiser'
import extractDepcruiseOptions from 'dependency-cruiser/config-utl/extract-depcruise-options'
import extractTSConfig from 'dependency-cruiser/config-utl/extract-ts-config'
import { afterAll, describe, expect, test } from 'vitest'

/**
 * The layer rules of .dependency-cruiser.cjs (docs/architecture.md), run by dependency-cruiser on the
 * code, and on small trees built to break each rule once: a rule that cannot fail proves nothing.
 * Through its API rather than its CLI: one process cruises all the trees (~30 ms each, not ~1 s).
 */

const ROOT = resolve(import.meta.dirname, '../..')
const OPTIONS = await extractDepcruiseOptions(join(ROOT, '.dependency-cruiser.cjs'))

async function violations(cwd: string): Promise<IViolation[]> {
  const roots = ['src', 'projections'].filter((root) => existsSync(join(cwd, root)))
  const result = await cruise(roots, { ...OPTIONS, validate: true, baseDir: cwd }, undefined, { tsConfig: extractTSConfig(join(cwd, 'tsconfig.json')) })
  if (typeof result.output === 'string') throw new Error('dependency-cruiser answered text, not a report')
  return result.output.summary.violations
}

const trees: string[] = []
afterAll(() => {
  for (const tree of trees) rmSync(tree, { recursive: true, force: true })
})

/** A throwaway tree with these files (path → content) and a tsconfig, laid out like the repository. */
function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'mirador-layers-'))
  trees.push(dir)
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { allowImportingTsExtensions: true, noEmit: true } }))
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true })
    writeFileSync(join(dir, path), content)
  }
  return dir
}

const module = (imports: string[] = []) => `${imports.map((path, i) => `import * as m${i} from '${path}'`).join('\n')}\nexport const x = 1\n`

describe('the layers', () => {
  test('the code keeps every rule', async () => {
    const found = await violations(ROOT)
    expect(found.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`)).toEqual([])
  }, 60_000)

  test.each([
    ['domain-is-pure', { 'src/domain/owners/owner.ts': module(['../../http/gate.ts']), 'src/http/gate.ts': module() }],
    ['domain-does-no-io', { 'src/domain/owners/owner.ts': module(['node:fs']) }],
    ['engine-knows-no-read-model', { 'projections/engine/runner.ts': module(['../listings/projection.ts']), 'projections/listings/projection.ts': module() }],
    ['read-models-below-features', { 'projections/listings/projection.ts': module(['../../src/zones/routes.ts']), 'src/zones/routes.ts': module() }],
    ['read-models-apart', { 'projections/listings/projection.ts': module(['../briefings/cache.ts']), 'projections/briefings/cache.ts': module() }],
    ['platform-knows-no-domain', { 'src/eventstore/port.ts': module(['../domain/owners/owner.ts']), 'src/domain/owners/owner.ts': module() }],
    ['shared-is-the-bottom', { 'src/shared/errors.ts': module(['../db/port.ts']), 'src/db/port.ts': module() }],
    ['nothing-imports-the-composition-root', { 'src/zones/routes.ts': module(['../storage.ts']), 'src/storage.ts': module() }],
    ['adapters-chosen-in-the-composition-root', { 'src/zones/routes.ts': module(['../db/postgres.ts']), 'src/db/postgres.ts': module() }],
    ['adapters-chosen-in-the-composition-root', { 'src/http/metrics.ts': module(['../metrics/prometheus.ts']), 'src/metrics/prometheus.ts': module() }],
    [
      'metrics-through-the-port',
      { 'src/zones/routes.ts': module(['prom-client']), 'node_modules/prom-client/package.json': '{"name":"prom-client","main":"index.js"}', 'node_modules/prom-client/index.js': 'exports.x = 1\n' },
    ],
    ['no-folder-cycles', { 'src/zones/routes.ts': module(['../http/gate.ts']), 'src/http/gate.ts': module(['../zones/schemas.ts']), 'src/zones/schemas.ts': module() }],
  ])('%s fails on an import that breaks it', async (rule, files) => {
    const found = await violations(tree(files))
    expect(found.map((v) => v.rule.name)).toContain(rule)
  }, 60_000)
})
