import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
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

const ROOT = resolve(import.meta.dirname, '../..')
const PGLITE_VERSION = (JSON.parse(readFileSync(join(ROOT, 'node_modules/@electric-sql/pglite/package.json'), 'utf8')) as { version: string }).version
/** Kept between runs (a single spec need not wait for an initdb), one per PGlite version. */
const CACHE = join(ROOT, 'node_modules/.cache/mirador-test', `pglite-${PGLITE_VERSION}`)

/**
 * initdb for PGlite costs 1.3–2.7 s and the suite opens ~60 clusters in specs and ~30 in server
 * processes, so one fresh cluster is made once and the others start as copies of it (0.4 s in memory,
 * a directory copy for a server). Made in a scratch directory and renamed into place, so an
 * interrupted run leaves no half-made template.
 */
async function makeTemplate(): Promise<void> {
  mkdirSync(resolve(CACHE, '..'), { recursive: true })
  const scratch = mkdtempSync(`${CACHE}-making-`)
  const cluster = await PGlite.create(join(scratch, 'cluster'))
  writeFileSync(join(scratch, 'fresh-cluster.tar'), Buffer.from(await (await cluster.dumpDataDir('none')).arrayBuffer()))
  await cluster.close()
  try {
    renameSync(scratch, CACHE)
  } catch {
    // Another run made it first.
    rmSync(scratch, { recursive: true, force: true })
  }
}

export default async function setup(project: TestProject): Promise<void> {
  if (!existsSync(join(CACHE, 'fresh-cluster.tar'))) await makeTemplate()
  project.provide('pgliteTemplate', join(CACHE, 'fresh-cluster.tar'))
  project.provide('pgliteTemplateDir', join(CACHE, 'cluster'))
}
