import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import { describe, expect, test } from 'vitest'
import { allProjections } from '../../src/storage.ts'

/**
 * One home per read model: SQL that names a read model's tables or columns lives in that read
 * model's folder (projections/<read model>/) and nowhere else — not in features, the engine, the
 * benchmarks or the test oracle, which call the read model's functions or import its column list.
 * Found by reading every SQL text in the code: a string or template that reads like SQL and names a
 * table or a column that only a read model has (columns the engine's and the event store's own tables
 * share, like `position`, say nothing).
 */

const ROOT = resolve(import.meta.dirname, '../..')
/** Production code, benchmarks and the test harnesses (oracles included); specs of a read model may look at its rows. */
const SCANNED = ['src', 'projections', 'bench', 'test/support']
const SQL = /\b(select|insert\s+into|update|delete\s+from|create\s+(unique\s+)?index|create\s+table|alter\s+table|drop\s+table)\b/i

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : []
  })
}

/** String and template literals of a file (templates whole, with their `${…}` parts). */
function literals(source: string): string[] {
  return [...source.matchAll(/`(?:[^`\\]|\\.)*`|'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"/g)].map((m) => m[0])
}

/** Table base names and columns of every `create table` in the statements. */
function tablesOf(statements: readonly string[]): { tables: string[]; columns: string[] } {
  const tables: string[] = []
  const columns: string[] = []
  for (const ddl of statements) {
    const match = /create table if not exists (\w+) \(([\s\S]*)\)\s*$/i.exec(ddl.trim())
    if (!match) continue
    tables.push(match[1]!)
    for (const line of match[2]!.split(/,\s*\n/)) {
      const column = /^\s*(\w+)\s+\w/.exec(line)?.[1]
      if (column && !/^(primary|unique|check|constraint)$/i.test(column)) columns.push(column)
    }
  }
  return { tables, columns }
}

/** Columns of the tables the engine and the event store own: naming them says nothing about a read model. */
function infrastructureColumns(): Set<string> {
  const texts = ['projections/engine', 'src/eventstore'].flatMap((dir) => files(join(ROOT, dir))).map((f) => readFileSync(f, 'utf8'))
  const ddl = texts.flatMap((text) => [...text.matchAll(/create table if not exists \w+ \([\s\S]*?\n\s*\)/gi)].map((m) => m[0]))
  return new Set(tablesOf(ddl).columns)
}

type Owned = { folder: string; projection: string; tables: string[]; tableKeys: string[]; columns: string[] }

function ownership(): Owned[] {
  const infrastructure = infrastructureColumns()
  const owned = allProjections.map((projection) => {
    const { tables, columns } = tablesOf(projection.schema(projection.tables))
    const home = files(join(ROOT, 'projections')).find((file) => readFileSync(file, 'utf8').includes(`name: '${projection.name}'`))!
    return { folder: relative(ROOT, join(home, '..')), projection: projection.name, tables, tableKeys: Object.keys(projection.tables), columns }
  })
  // A column name that tables of two folders share (owner_id, status) does not tell whose SQL it is.
  const foldersOf = new Map<string, Set<string>>()
  for (const { folder, columns } of owned) for (const column of columns) foldersOf.set(column, (foldersOf.get(column) ?? new Set()).add(folder))
  return owned.map((o) => ({ ...o, columns: o.columns.filter((column) => !infrastructure.has(column) && foldersOf.get(column)!.size === 1) }))
}

const word = (name: string) => new RegExp(`\\b${name}(_v\\d+(_b\\d+)?)?\\b`)

describe('one home per read model', () => {
  const owners = ownership()

  test('every read model lives in a folder of its own under projections/', () => {
    for (const owned of owners) expect(owned.folder, owned.projection).toMatch(/^projections\/(?!engine$)[a-z-]+$/)
  })

  test("only a read model's own folder holds SQL that names its tables or columns", () => {
    const trespasses: string[] = []
    for (const file of SCANNED.flatMap((dir) => files(join(ROOT, dir)))) {
      const path = relative(ROOT, file)
      for (const literal of literals(readFileSync(file, 'utf8'))) {
        if (!SQL.test(literal)) continue
        for (const owned of owners) {
          if (path.startsWith(`${owned.folder}/`)) continue
          const named = [
            ...owned.tables.filter((table) => word(table).test(literal)),
            ...owned.columns.filter((column) => new RegExp(`\\b${column}\\b`).test(literal)),
            ...owned.tableKeys.filter((key) => new RegExp(`\\$\\{[^}]*\\.${key}\\}`).test(literal)),
          ]
          if (named.length > 0) trespasses.push(`${path}: ${owned.projection} (${[...new Set(named)].join(', ')}) in ${literal.slice(0, 80).replace(/\s+/g, ' ')}…`)
        }
      }
    }
    expect(trespasses).toEqual([])
  })
})
