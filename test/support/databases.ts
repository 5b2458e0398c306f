import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openPglite } from '../../src/db/pglite.ts'
import type { Db } from '../../src/db/port.ts'
import { openPostgres } from '../../src/db/postgres.ts'
import type { BatchGuarantee } from '../../src/eventstore/port.ts'

export type DatabaseTarget = {
  name: 'pglite' | 'postgres'
  /** A fresh private database: PGlite in memory, or a new PostgreSQL schema. */
  open(): Promise<Db>
  /** A fresh database that can be reached again: by a second process, or after a restart. */
  create(): Promise<SharedDatabase>
}

/**
 * A database several connections can reach. PostgreSQL: a new schema, and every `connect` is a
 * separate pool, as a second process would open. PGlite: a data dir under the OS temp dir; PGlite
 * allows one connection per data dir, so open connections share one instance, which stops when
 * the last of them closes and starts again from its files on the next `connect` (a restart).
 */
export type SharedDatabase = {
  /** The PostgreSQL schema or the PGlite data dir. */
  readonly location: string
  connect(): Promise<Db>
  /** Removes the database; every connection must be closed first. */
  dispose(): Promise<void>
}

const DATABASE_URL = process.env.DATABASE_URL

/** A fresh schema name per call, so suites sharing the CI database never see each other's rows. */
export const uniqueSchema = (prefix = 't') =>
  `${prefix}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`

/**
 * The databases every adapter suite runs against: PGlite always, PostgreSQL when DATABASE_URL
 * is set (CI sets it). The skip is printed, never silent.
 */
export function databaseTargets(suite: string): DatabaseTarget[] {
  const targets: DatabaseTarget[] = [{ name: 'pglite', open: () => openPglite(), create: createPglite }]
  if (DATABASE_URL) {
    const url = DATABASE_URL
    targets.push({
      name: 'postgres',
      open: () => openPostgres(url, { schema: uniqueSchema() }),
      create: async () => createPostgres(url),
    })
  } else {
    console.warn(`[skipped] ${suite} on PostgreSQL: DATABASE_URL is not set`)
  }
  return targets
}

/**
 * How an event store may record `appendMany`: all or nothing, or stream by stream (KurrentDB before
 * 25.1; the SQL stores with SINGLE_STREAM_APPENDS). The suites that write batches run under both.
 */
export const BATCH_GUARANTEES: readonly BatchGuarantee[] = ['all-or-nothing', 'stream-by-stream']

/** The environment a server or CLI process is given to record batches as `batches` says. */
export const batchesEnv = (batches: BatchGuarantee): Record<string, string> => ({ SINGLE_STREAM_APPENDS: batches === 'stream-by-stream' ? 'on' : 'off' })

/** Opens a second connection pool onto the same PostgreSQL schema (a "second process"). */
export async function reopenPostgres(schema: string, max = 10): Promise<Db> {
  if (!DATABASE_URL) throw new Error('DATABASE_URL is not set')
  return openPostgres(DATABASE_URL, { schema, max })
}

function createPostgres(url: string): SharedDatabase {
  const schema = uniqueSchema()
  return {
    location: schema,
    connect: () => openPostgres(url, { schema }),
    async dispose() {
      const db = await openPostgres(url, { max: 1 })
      await db.exec(`drop schema if exists ${schema} cascade`)
      await db.close()
    },
  }
}

async function createPglite(): Promise<SharedDatabase> {
  const dataDir = await mkdtemp(join(tmpdir(), 'mirador-pglite-'))
  let running: { db: Promise<Db>; handles: number } | null = null
  return {
    location: dataDir,
    async connect() {
      running ??= { db: openPglite(dataDir), handles: 0 }
      const instance = running
      instance.handles += 1
      const db = await instance.db
      let closed = false
      return {
        ...db,
        async close() {
          if (closed) return
          closed = true
          instance.handles -= 1
          if (instance.handles > 0) return
          if (running === instance) running = null
          await db.close()
        },
      }
    },
    async dispose() {
      await rm(dataDir, { recursive: true, force: true })
    },
  }
}

/** A DATABASE_URL for a server process, isolated in its own schema. */
export function isolatedDatabaseUrl(schema = uniqueSchema('srv')): string | undefined {
  if (!DATABASE_URL) return undefined
  const url = new URL(DATABASE_URL)
  url.searchParams.set('search_path', schema)
  return url.toString()
}
