import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import type { TestProject } from 'vitest/node'

declare module 'vitest' {
  export interface ProvidedContext {
    /** Path of a tarball of a fresh PGlite cluster (test/support/pglite-template.ts). */
    pgliteTemplate: string
  }
}

/**
 * Runs once per `vitest run`: initdb for PGlite costs 1.3–2.5 s and the specs open ~60 clusters, so one
 * fresh cluster is made here and every other one starts as a copy of it (0.4 s).
 */
export default async function setup(project: TestProject): Promise<() => void> {
  const dir = mkdtempSync(join(tmpdir(), 'mirador-pglite-template-'))
  const cluster = await PGlite.create()
  const tarball = join(dir, 'fresh-cluster.tar')
  writeFileSync(tarball, Buffer.from(await (await cluster.dumpDataDir('none')).arrayBuffer()))
  await cluster.close()
  project.provide('pgliteTemplate', tarball)
  return () => rmSync(dir, { recursive: true, force: true })
}
