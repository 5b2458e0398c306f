import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import { describe, expect, test } from 'vitest'

/**
 * The zone statistics are computed once, in src/domain/market/zone-statistics.ts (docs/architecture.md,
 * "Where each rule of the product lives"): SQL only selects the listings they are computed from, and
 * the rules a change of the product would touch (the 30-day window, the sale filter, the publication
 * minimum, the median) are each written in that one file. Found by reading the production code and the
 * benchmarks: a second spelling of a rule anywhere fails here, with the file that holds it.
 */

const ROOT = resolve(import.meta.dirname, '../..')
const MODULE = 'src/domain/market/zone-statistics.ts'
/** Where the middle values of a column are found (selection over typed arrays), for the module: no rule in it. */
const COLUMNS = 'src/domain/market/listing-columns.ts'
const SCANNED = ['src', 'projections', 'bench']

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : []
  })
}

const sources = SCANNED.flatMap((dir) => files(join(ROOT, dir))).map((path) => ({ file: relative(ROOT, path), text: readFileSync(path, 'utf8') }))

/** The files (but `except`) whose text matches `pattern`, with the line of each match. */
function spelledIn(pattern: RegExp, except: readonly string[] = []): string[] {
  return sources.flatMap(({ file, text }) =>
    except.includes(file)
      ? []
      : text.split('\n').flatMap((line, i) => (pattern.test(line) ? [`${file}:${i + 1}: ${line.trim()}`] : [])),
  )
}

/** The files that define what `pattern` matches. */
const definedIn = (pattern: RegExp): string[] => sources.filter(({ text }) => pattern.test(text)).map(({ file }) => file)

describe('the zone statistics are computed once', () => {
  test('no SQL aggregates a median or a percentile: SQL only selects the rows', () => {
    expect(spelledIn(/percentile_(disc|cont)|within\s+group/i)).toEqual([])
  })

  test('middle values are selected only for the module (no other quickselect or median of a column)', () => {
    expect(spelledIn(/\(n - 1\) >> 1|\bfunction select\(|middleRanks|atRanks\(|ppm2AtRanks\(/, [MODULE, COLUMNS])).toEqual([])
  })

  test('the 30-day window is written once', () => {
    // Other spellings of 30 days, in hours, seconds, milliseconds or SQL intervals.
    const thirtyDays = /\b720\s*(\*|hours?\b)|'720|2_?592_?000|\b30\s*\*\s*(24|DAY)|interval\s+'30 days'|720 \* 3_?600/i
    // The longest grace of a key roll is 30 days too: another rule, which may change alone.
    expect(spelledIn(thirtyDays, [MODULE, 'src/domain/keys/key.ts'])).toEqual([])
    expect(definedIn(/const CHANGE_WINDOW_MS\s*=/)).toEqual([MODULE])
  })

  test('the publication minimum is written once, and nothing compares a count with 3 elsewhere', () => {
    expect(definedIn(/const MIN_FOR_MEDIAN\s*=/)).toEqual([MODULE])
    expect(spelledIn(/\b(n|n_active|n_sale|nSale|count|(slots|sale|listings|group|values)\.length)\s*(>=|<|>|<=)\s*[23]\b/, [MODULE])).toEqual([])
  })

  test('the sale filter is written once: no SQL or code outside the module picks sale listings by name', () => {
    const saleByName = /operation\s*(=|===|!==|<>)\s*['"]Venta['"]|['"]Venta['"]\s*(===|!==)/
    // The demo and synthetic market generators write listings: what a sale costs, not which listings a figure counts.
    expect(spelledIn(saleByName, [MODULE, 'src/domain/demo/market.ts', 'projections/listings/synthetic.ts'])).toEqual([])
    expect(definedIn(/const SALE_OPERATION\b/)).toEqual([MODULE])
  })
})
