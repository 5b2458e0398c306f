import { readdirSync, readFileSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import ts from 'typescript'
import { describe, expect, test } from 'vitest'

/**
 * One small module per runtime (src/main.ts Bun, src/main-node.ts Node, src/main-deno.ts Deno) and
 * nowhere else names a runtime: the `Bun` and `Deno` globals, and the imports only one runtime's
 * server uses. `node:fs`, `node:path` and the like are not on the list: Bun, Deno and Node all
 * provide them, and the shared start-up (src/server.ts) uses them.
 */

const ROOT = resolve(import.meta.dirname, '../..')
const EDGES = ['src/main.ts', 'src/main-node.ts', 'src/main-deno.ts']
const RUNTIME_GLOBALS = new Set(['Bun', 'Deno'])
const RUNTIME_IMPORT = /^(bun|bun:.*|node:https?|node:http2|https?|http2|@elysiajs\/node|jsr:.*|npm:.*)$/

/** What in `source` names a runtime: `Bun` at line 3, `import "node:http"` at line 1, … */
function runtimeNames(source: string): string[] {
  const file = ts.createSourceFile('module.ts', source, ts.ScriptTarget.Latest, true)
  const found: string[] = []
  const at = (node: ts.Node) => file.getLineAndCharacterOfPosition(node.getStart()).line + 1
  const visit = (node: ts.Node) => {
    if (ts.isIdentifier(node) && RUNTIME_GLOBALS.has(node.text)) {
      const parent = node.parent
      const onGlobalThis = ts.isPropertyAccessExpression(parent) && parent.expression.getText() === 'globalThis'
      const isMemberName = (ts.isPropertyAccessExpression(parent) && parent.name === node && !onGlobalThis) || (ts.isPropertyAssignment(parent) && parent.name === node)
      if (!isMemberName) found.push(`${node.text} at line ${at(node)}`)
    }
    // `'Bun' in globalThis`
    if (ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.InKeyword && ts.isStringLiteral(node.left) && RUNTIME_GLOBALS.has(node.left.text)) {
      found.push(`${node.left.text} at line ${at(node)}`)
    }
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      if (RUNTIME_IMPORT.test(node.moduleSpecifier.text)) found.push(`import "${node.moduleSpecifier.text}" at line ${at(node)}`)
    }
    if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [specifier] = node.arguments
      if (specifier && ts.isStringLiteral(specifier) && RUNTIME_IMPORT.test(specifier.text)) found.push(`import("${specifier.text}") at line ${at(node)}`)
    }
    ts.forEachChild(node, visit)
  }
  visit(file)
  return found
}

const sources = (dir: string): string[] =>
  readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
  )

describe('runtime differences live in the edge modules only', () => {
  test('no module of src or projections but the three edges names Bun, Deno or a runtime-only import', () => {
    const offenders = [...sources('src'), ...sources('projections')]
      .map((path) => relative(ROOT, join(ROOT, path)))
      .filter((path) => !EDGES.includes(path))
      .flatMap((path) => runtimeNames(readFileSync(join(ROOT, path), 'utf8')).map((name) => `${path}: ${name}`))
    expect(offenders).toEqual([])
  })

  test('each edge names its own runtime (the check looks at the right files)', () => {
    expect(runtimeNames(readFileSync(join(ROOT, 'src/main.ts'), 'utf8')).some((name) => name.startsWith('Bun '))).toBe(true)
    expect(runtimeNames(readFileSync(join(ROOT, 'src/main-deno.ts'), 'utf8')).some((name) => name.startsWith('Deno '))).toBe(true)
    expect(runtimeNames(readFileSync(join(ROOT, 'src/main-node.ts'), 'utf8'))).toContain('import "node:http" at line 6')
  })

  test('the check catches each way of naming a runtime, and not a word in a comment or a property', () => {
    expect(runtimeNames("const s = Bun.serve({ fetch })")).toEqual(['Bun at line 1'])
    expect(runtimeNames("type S = ReturnType<typeof Bun.serve>")).toEqual(['Bun at line 1'])
    expect(runtimeNames("if ('Deno' in globalThis) {}\nconst d = globalThis.Deno\nDeno.exit(0)")).toEqual(['Deno at line 1', 'Deno at line 2', 'Deno at line 3'])
    expect(runtimeNames("import { serve } from 'bun'\nimport { Database } from 'bun:sqlite'")).toEqual(['import "bun" at line 1', 'import "bun:sqlite" at line 2'])
    expect(runtimeNames("import { createServer } from 'node:http'\nexport * from 'http'")).toEqual(['import "node:http" at line 1', 'import "http" at line 2'])
    expect(runtimeNames("const { node } = await import('@elysiajs/node')")).toEqual(['import("@elysiajs/node") at line 1'])
    expect(runtimeNames("// Bun.serve hands over only the target\nconst runtime = { Bun: 1 }.Bun\nimport { readFileSync } from 'node:fs'")).toEqual([])
  })
})
