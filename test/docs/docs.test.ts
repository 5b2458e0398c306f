import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { describe, expect, test } from 'vitest'
import { FeedLine, MAX_OBSERVED_AHEAD_MS, parseFeedLine } from '../../src/domain/listings/feed.ts'
import { type ErrorCode, httpStatus } from '../../src/shared/errors.ts'

/** The user documentation says what the code does: these specifications fail when one drifts from the other. */
const ROOT = resolve(import.meta.dirname, '../..')
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8')
const docs = readdirSync(join(ROOT, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)

/** First-column values of the markdown table rows of `text`, with the rest of each row. */
const tableRows = (text: string) =>
  [...text.matchAll(/^\| `([^`]+)` \| ([^|]+) \|(.*)$/gm)].map(([, first, second, rest]) => ({ first: first!, second: second!.trim(), rest: rest! }))

describe('the documentation is self-contained', () => {
  test('README and docs/ link only to files of the repository, never to ../shared', () => {
    for (const file of ['README.md', ...docs]) {
      const text = read(file)
      expect(text, file).not.toMatch(/\.\.\/shared/)
      for (const [, target] of text.matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)) {
        if (/^https?:/.test(target!)) continue
        expect(existsSync(join(ROOT, dirname(file), target!)), `${file} → ${target}`).toBe(true)
      }
    }
  })

  test('the CLI examples of the README, docs/ and examples/ print only the CLI\'s output: npm run -s, never npm\'s banner', () => {
    for (const file of ['README.md', 'examples/README.md', ...docs]) {
      expect(read(file).match(/npm run (?!-s cli -- )\S+ cli\b|npm run cli\b.*/g), file).toBeNull()
    }
  })

  test('docs/errors.md lists every error code the API answers with, with its HTTP status', () => {
    const rows = new Map(tableRows(read('docs/errors.md')).map((row) => [row.first, Number(row.second)]))
    const operatorOnly: ErrorCode[] = ['conflict', 'forbidden']
    for (const [code, status] of Object.entries(httpStatus)) {
      if (operatorOnly.includes(code as ErrorCode)) continue
      expect(rows.get(code), code).toBe(status)
    }
  })

  test('docs/feed-format.md documents every feed field, and its complete example line is valid', () => {
    const text = read('docs/feed-format.md')
    const documented = tableRows(text).map((row) => row.first).filter((field) => /^[a-z_0-9]+$/.test(field))
    expect(new Set(documented)).toEqual(new Set(Object.keys(FeedLine.properties)))
    const example = /## A complete line\s+```json\n(.+)\n```/.exec(text)![1]!
    expect(Object.keys(JSON.parse(example)).sort()).toEqual(Object.keys(FeedLine.properties).sort())
    expect(parseFeedLine(example, 1, new Date('2026-04-01T00:00:00Z'))).toMatchObject({ ok: true })
    const lines = read('docs/feed-example.ndjson').trim().split('\n')
    lines.forEach((line, i) => expect(parseFeedLine(line, i + 1, new Date('2026-04-01T00:00:00Z')), line).toMatchObject({ ok: true }))
  })

  test('docs/feed-format.md states the clock skew a line may be observed ahead, and quotes its refusal as parseFeedLine words it', () => {
    const text = read('docs/feed-format.md')
    const minutes = MAX_OBSERVED_AHEAD_MS / 60_000
    expect(text).toContain(`**more than ${minutes} minutes**`)
    const quoted = /^line 2: observed_at: .*\(.*, (\S+)\)$/m.exec(text)!
    const now = new Date(quoted[1]!)
    const line = JSON.stringify({ ...JSON.parse(read('docs/feed-example.ndjson').split('\n')[0]!), observed_at: new Date(now.getTime() + MAX_OBSERVED_AHEAD_MS + 1).toISOString() })
    expect(parseFeedLine(line, 2, now)).toMatchObject({ ok: false, reason: quoted[0] })
  })
})
