import type { TestProject } from 'vitest/node'
import { prepareFreshCluster } from '../../src/db/pglite-fresh-cluster.ts'

declare module 'vitest' {
  export interface ProvidedContext {
    /** A fresh PGlite cluster as a directory, copied into a server's data directory (`initialisedDataDir`). */
    pgliteTemplateDir: string
  }
}

/**
 * The suite opens ~60 PGlite clusters in specs and ~30 in server processes: each starts as a copy of
 * the fresh cluster made at install (src/db/pglite-fresh-cluster.ts), made here if `npm ci` did not
 * (installed with --ignore-scripts), rather than by an initdb of 1.3–2.7 s each.
 */
export default async function setup(project: TestProject): Promise<void> {
  project.provide('pgliteTemplateDir', (await prepareFreshCluster()).dir)
}
