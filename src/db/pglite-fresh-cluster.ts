import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { PGlite } from '@electric-sql/pglite'

/*
 * A fresh PGlite cluster, made once per installed PGlite version (by `npm ci`'s postinstall, or by
 * the test suite's setup) so that a new embedded store starts as a copy of it instead of running
 * initdb: initdb in WebAssembly took 1.3–2.7 s of a first start on a quiet machine (11–12 s on a busy
 * one) and left the server holding its memory. Absent (installed with --ignore-scripts, a read-only
 * node_modules), a new store runs initdb as before. Decision 0119.
 */

const ROOT = resolve(import.meta.dirname, '../..')

function pgliteVersion(): string {
  return (JSON.parse(readFileSync(join(ROOT, 'node_modules/@electric-sql/pglite/package.json'), 'utf8')) as { version: string }).version
}

/** Where this PGlite version's fresh cluster is kept: `cluster/` (a data directory) and `fresh-cluster.tar` (the same, for a cluster in memory). */
export const FRESH_CLUSTER = join(ROOT, 'node_modules/.cache/mirador', `pglite-${pgliteVersion()}`)

/** The fresh cluster's paths, or null when none was made. */
export function freshCluster(): { dir: string; tarball: string } | null {
  const tarball = join(FRESH_CLUSTER, 'fresh-cluster.tar')
  return existsSync(tarball) ? { dir: join(FRESH_CLUSTER, 'cluster'), tarball } : null
}

/**
 * Makes the fresh cluster unless it exists. Made in a scratch directory and renamed into place, so
 * that an interrupted run leaves no half-made cluster and of two runs at once one wins.
 */
export async function prepareFreshCluster(): Promise<{ dir: string; tarball: string }> {
  const made = freshCluster()
  if (made) return made
  mkdirSync(resolve(FRESH_CLUSTER, '..'), { recursive: true })
  const scratch = mkdtempSync(`${FRESH_CLUSTER}-making-`)
  const cluster = await PGlite.create(join(scratch, 'cluster'))
  writeFileSync(join(scratch, 'fresh-cluster.tar'), Buffer.from(await (await cluster.dumpDataDir('none')).arrayBuffer()))
  await cluster.close()
  try {
    renameSync(scratch, FRESH_CLUSTER)
  } catch {
    rmSync(scratch, { recursive: true, force: true })
  }
  return freshCluster()!
}

// `bun src/db/pglite-fresh-cluster.ts`: the postinstall step of package.json.
if (import.meta.main) {
  const started = Date.now()
  const { dir } = await prepareFreshCluster()
  console.log(`mirador: a fresh embedded cluster for new stores is ready in ${dir} (${((Date.now() - started) / 1000).toFixed(1)} s)`)
}
