import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import ts from 'typescript'
import { describe, expect, test } from 'vitest'

/**
 * Small files and small functions: no production file (src/, projections/) over 400 lines, no
 * function over 80 lines. A function's extent is found with the TypeScript compiler: from the line
 * where it starts (its modifiers included, the comment above it not) to the line of its
 * closing brace, functions declared inside it included: a factory whose closure is 300 lines long
 * is a 300-line function. Every kind counts: declarations, methods, accessors, constructors,
 * arrows, function expressions.
 */

const ROOT = join(import.meta.dirname, '../..')
const MAX_FILE_LINES = 400
const MAX_FUNCTION_LINES = 80

const sources = (dir: string): string[] =>
  readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
  )

/** A function's name as its readers call it: its own, or that of the variable or property it is assigned to. */
function nameOf(node: ts.FunctionLikeDeclaration): string {
  if (node.name) return node.name.getText()
  if (ts.isConstructorDeclaration(node)) return 'constructor'
  const parent = node.parent
  if ((ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) && parent.name) return parent.name.getText()
  return '(anonymous)'
}

/** Each function of `source` with its length in lines. */
function functionLengths(path: string, source: string): { name: string; lines: number }[] {
  const file = ts.createSourceFile(path, source, ts.ScriptTarget.Latest, true)
  const lineOf = (position: number) => file.getLineAndCharacterOfPosition(position).line
  const found: { name: string; lines: number }[] = []
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      found.push({ name: nameOf(node as ts.FunctionLikeDeclaration), lines: lineOf(node.getEnd()) - lineOf(node.getStart()) + 1 })
    }
    ts.forEachChild(node, visit)
  }
  visit(file)
  return found
}

const lineCount = (source: string) => source.split('\n').length - (source.endsWith('\n') ? 1 : 0)

/** Every file and function over its limit: "path (N lines)" and "path name (N lines)". */
function oversized(): { key: string; lines: number }[] {
  return [...sources('src'), ...sources('projections')].flatMap((path) => {
    const source = readFileSync(join(ROOT, path), 'utf8')
    const file = lineCount(source) > MAX_FILE_LINES ? [{ key: path, lines: lineCount(source) }] : []
    const functions = functionLengths(path, source)
      .filter(({ lines }) => lines > MAX_FUNCTION_LINES)
      .map(({ name, lines }) => ({ key: `${path} ${name}`, lines }))
    return [...file, ...functions]
  })
}

describe('small files, small functions', () => {
  const found = oversized()

  test(`no production file over ${MAX_FILE_LINES} lines and no function over ${MAX_FUNCTION_LINES}`, () => {
    expect(found.map(({ key, lines }) => `${key} (${lines} lines)`)).toEqual([])
  })

  test('a function is measured from its first line to its closing brace, the functions inside it included', () => {
    const body = (lines: number) => Array.from({ length: lines }, (_, i) => `  const v${i} = ${i}`).join('\n')
    const source = `export function outer() {\n  const inner = () => {\n${body(3)}\n  }\n${body(2)}\n}\nclass C {\n  method() {\n    return 1\n  }\n}\n`
    expect(functionLengths('example.ts', source)).toEqual([
      { name: 'outer', lines: 9 },
      { name: 'inner', lines: 5 },
      { name: 'method', lines: 3 },
    ])
  })
})
