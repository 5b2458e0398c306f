import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import type { TestProject } from 'vitest/node'

declare module 'vitest' {
  export interface ProvidedContext {
    /** A tarball of a fresh PGlite cluster, for clusters opened in a spec (test/support/pglite-template.ts). */
    pgliteTemplate: string
    /** The same fresh cluster as a directory, copied into a server's data directory (`initialisedDataDir`). */
    pgliteTemplateDir: string
  }
}

/**
 * Runs once per `vitest run`: initdb for PGlite costs 1.3–2.7 s and the suite opens ~60 clusters in
 * specs and ~30 in server processes, so one fresh cluster is made here and the others start as copies
 * of it (0.4 s in memory, a directory copy for a server).
 */
export default async function setup(project: TestProject): Promise<() => void> {
  const dir = mkdtempSync(join(tmpdir(), 'mirador-pglite-template-'))
  const clusterDir = join(dir, 'cluster')
  mkdirSync(clusterDir)
  const cluster = await PGlite.create(clusterDir)
  const tarball = join(dir, 'fresh-cluster.tar')
  writeFileSync(tarball, Buffer.from(await (await cluster.dumpDataDir('none')).arrayBuffer()))
  await cluster.close()
  project.provide('pgliteTemplate', tarball)
  project.provide('pgliteTemplateDir', clusterDir)
  return () => rmSync(dir, { recursive: true, force: true })
}
