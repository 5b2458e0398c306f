import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { describe, expect, test } from 'vitest'

/**
 * docs/decisions.md is the index of the decision records in docs/decisions/ (one file per decision).
 * A reader who follows a citation in the code, or opens the index, must reach the right record in one hop.
 */
const ROOT = resolve(import.meta.dirname, '../..')
const RECORDS = join(ROOT, 'docs/decisions')
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8')
const index = read('docs/decisions.md')
const numbered = readdirSync(RECORDS).filter((name) => /^\d{4}-[a-z0-9-]+\.md$/.test(name))
/** Records written on a branch before they had a number (docs/decisions.md, "Adding a decision"). */
const unnumbered = readdirSync(RECORDS).filter((name) => name.startsWith('new-') && name.endsWith('.md'))

/** Every file under `dir` (recursively) whose name ends with one of `endings`. */
const filesUnder = (dir: string, endings: string[]): string[] =>
  readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : filesUnder(path, endings)
    return endings.some((ending) => entry.name.endsWith(ending)) ? [path] : []
  })

describe('decision records', () => {
  test('every numbered record has a title, Context, Decision and Status, which is Proposed, Accepted or Superseded by a record', () => {
    expect(numbered.length).toBeGreaterThan(0)
    for (const name of numbered) {
      const text = readFileSync(join(RECORDS, name), 'utf8')
      expect(text, name).toMatch(/^# \S/)
      for (const section of ['## Context', '## Decision', '## Status']) expect(text, `${name}: ${section}`).toContain(`\n${section}\n`)
      const status = text.split('\n## Status\n')[1]!.trim()
      expect(status, name).toMatch(/^((?:Proposed|Accepted) \(\d{4}-\d\d-\d\d|Superseded by \[\d{4}\]\(\d{4}-[a-z0-9-]+\.md\) \(\d{4}-\d\d-\d\d\))/)
    }
  })

  test('numbers are unique, and a record awaiting its number still has Context, Decision and Status', () => {
    const numbers = numbered.map((name) => name.slice(0, 4))
    expect(new Set(numbers).size).toBe(numbers.length)
    for (const name of unnumbered) {
      const text = readFileSync(join(RECORDS, name), 'utf8')
      for (const section of ['## Context', '## Decision', '## Status']) expect(text, `${name}: ${section}`).toContain(section)
    }
  })

  test('links between records lead to files that exist', () => {
    for (const name of [...numbered, ...unnumbered]) {
      for (const [, target] of readFileSync(join(RECORDS, name), 'utf8').matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)) {
        if (/^https?:/.test(target!)) continue
        expect(existsSync(join(RECORDS, target!)), `${name} → ${target}`).toBe(true)
      }
    }
  })
})

describe('the index, docs/decisions.md', () => {
  test('links every numbered record, with its title and its status', () => {
    for (const name of numbered) {
      const text = readFileSync(join(RECORDS, name), 'utf8')
      const title = text.split('\n')[0]!.slice(2)
      const row = index.split('\n').find((line) => line.includes(`](decisions/${name})`) && line.startsWith(`| ${name.slice(0, 4)} |`))
      expect(row, `${name} has no row in the index`).toBeDefined()
      expect(row, name).toContain(`[${title}](decisions/${name})`)
      const status = text.split('\n## Status\n')[1]!.trim()
      const superseded = status.match(/^Superseded by \[(\d{4})\]/)
      expect(row, name).toContain(superseded ? `Superseded by [${superseded[1]}]` : status.startsWith('Proposed') ? 'Proposed (' : 'Accepted (')
    }
  })

  test('every section cited as docs/decisions.md, "Section" in code, tests, benchmarks and docs is named on the index', () => {
    const sources = [
      ...['src', 'projections', 'test', 'bench', 'docs'].flatMap((dir) => filesUnder(dir, ['.ts', '.md', '.cjs'])),
      'README.md',
    ].filter((path) => path !== 'docs/decisions.md' && !path.startsWith('docs/decisions/'))
    const cited = sources.flatMap((path) =>
      [...read(path).matchAll(/docs\/decisions\.md,\s+(?:"([^"]+)"|([A-Z][^)"]*)\))/g)].map(([, quoted, bare]) => ({ path, section: (quoted ?? bare)!.trim() })),
    )
    expect(cited.length).toBeGreaterThan(0)
    for (const { path, section } of cited) expect(index, `${path} cites "${section}"`).toContain(section)
  })
})
