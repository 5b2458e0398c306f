/**
 * The demo market prepared once (decision 0123). `npm ci`'s postinstall seeds the default demo
 * market, anchored at that day, into an embedded store and catches its read models up; a first
 * start on an empty DATA_DIR that would seed that same market starts as a copy of it instead of
 * seeding (0.8 s) and projecting (0.6 s) on the start path. The copy is the store such a first start
 * would have made on the day of the install: the same lines, hence the same events and answers.
 *
 * A prepared store is named by what it holds (the day, the size, the seed) and by a fingerprint of
 * the code that wrote it (src/ and projections/): code changed since the install (a `git pull`) or
 * another day finds none, and the server seeds as before.
 */
import { createHash } from 'node:crypto'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs'
import { join, resolve } from 'node:path'
import type { Config } from './config.ts'
import { FRESH_CLUSTER } from './db/pglite-fresh-cluster.ts'
import { seedDemo } from './demo/seed.ts'
import { DEMO_DEFAULTS, type DemoOptions, demoAnchor } from './domain/demo/market.ts'
import { embeddedStoreDir, embeddedStoreExists, openStorage } from './storage.ts'

const ROOT = resolve(import.meta.dirname, '..')
const PREPARED = join(FRESH_CLUSTER, 'demo')
const SCRATCH = 'making-'

/** A digest of every file under src/ and projections/: what wrote a prepared store. */
function codeFingerprint(): string {
  const hash = createHash('sha256')
  for (const top of ['src', 'projections']) {
    const files = (readdirSync(join(ROOT, top), { recursive: true, withFileTypes: true }) as { name: string; parentPath: string; isFile(): boolean }[])
      .filter((entry) => entry.isFile())
      .map((entry) => join(entry.parentPath, entry.name))
      .sort()
    for (const file of files) hash.update(file.slice(ROOT.length)).update('\0').update(readFileSync(file)).update('\0')
  }
  return hash.digest('hex').slice(0, 16)
}

/** Where the store seeded with `demo` by this code is kept once prepared. */
export function preparedDemoDir(demo: DemoOptions, root: string = PREPARED): string {
  return join(root, `${demo.anchor.toISOString().slice(0, 10)}-${demo.listings}-${demo.seed}-${codeFingerprint()}`)
}

/** The demo market a first start at `now` seeds with this configuration. */
export const demoOfFirstStart = (config: Pick<Config, 'demoListings'>, now: Date): DemoOptions => ({
  seed: DEMO_DEFAULTS.seed,
  listings: config.demoListings ?? DEMO_DEFAULTS.listings,
  anchor: demoAnchor(now),
})

/**
 * Seeds `demo` into a new embedded store and catches its read models up, unless prepared already.
 * Made in a scratch directory and renamed into place, so that an interrupted run leaves nothing to
 * copy and of two runs at once one wins; the stores prepared for other days or other code are removed.
 */
export async function prepareDemo(demo: DemoOptions, root: string = PREPARED): Promise<string> {
  const target = preparedDemoDir(demo, root)
  if (existsSync(target)) return target
  mkdirSync(root, { recursive: true })
  const scratch = mkdtempSync(join(root, SCRATCH))
  try {
    const storage = await openStorage({ dataDir: scratch, databaseUrl: undefined, esdbConnectionString: undefined, singleStreamAppends: false })
    try {
      await seedDemo(storage.store, demo)
      await storage.runner.catchUp()
    } finally {
      await storage.close()
    }
    // Another run's scratch directory is its own to remove (`npm ci` wipes any left by a killed run).
    for (const older of readdirSync(root)) {
      if (!older.startsWith(SCRATCH) && join(root, older) !== target) rmSync(join(root, older), { recursive: true, force: true })
    }
    try {
      renameSync(embeddedStoreDir(scratch), target)
    } catch (error) {
      if (!existsSync(target)) throw error // else another run prepared it first
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
  return target
}

/**
 * On a first start (an embedded store not made yet, the demo on, events kept beside the read
 * models), copies the store prepared for the demo this start would seed, if there is one; returns
 * the directory copied, else null. Copied beside the store and renamed, so that a copy cut short
 * leaves no half store.
 */
export function copyPreparedDemo(config: Pick<Config, 'databaseUrl' | 'esdbConnectionString' | 'demoOnEmpty' | 'demoListings' | 'dataDir'>, now: Date, root: string = PREPARED): string | null {
  if (config.databaseUrl || config.esdbConnectionString || !config.demoOnEmpty || embeddedStoreExists(config.dataDir)) return null
  const prepared = preparedDemoDir(demoOfFirstStart(config, now), root)
  if (!existsSync(prepared)) return null
  const store = embeddedStoreDir(config.dataDir)
  const copying = `${store}.copying`
  rmSync(copying, { recursive: true, force: true })
  try {
    cpSync(prepared, copying, { recursive: true })
  } catch {
    // Removed meanwhile (an install preparing another day's): this start seeds instead.
    rmSync(copying, { recursive: true, force: true })
    return null
  }
  rmSync(store, { recursive: true, force: true })
  renameSync(copying, store)
  return prepared
}

// `bun src/prepared-demo.ts`: the postinstall step of package.json, after the fresh cluster.
if (import.meta.main) {
  const started = Date.now()
  const dir = await prepareDemo(demoOfFirstStart({ demoListings: undefined }, new Date()))
  console.log(`mirador: the demo market for a first start today is ready in ${dir} (${((Date.now() - started) / 1000).toFixed(1)} s)`)
}
