import { rm } from 'node:fs/promises'
import { createClient } from 'redis'
import { afterAll, beforeAll } from 'vitest'
import { openPostgres } from '../../src/db/postgres.ts'
import { uniqueSchema } from './databases.ts'
import { type RunningServer, startServer, tempDataDir } from './server.ts'

export type ServerPair = {
  /** Servers a and b, once the enclosing describe block's beforeAll has run. */
  readonly servers: RunningServer[]
  /** Ids of the keys a test issued: their rate-limit counters are removed from Redis after the block. */
  readonly keyIds: string[]
  /** Runs an operator command through server a's socket with --json and returns its parsed output; fails loudly on a refusal. */
  cli<T = Record<string, unknown>>(...args: string[]): Promise<T>
}

/**
 * Two real server processes (`bun src/main.ts`) for the enclosing describe block, sharing one Redis
 * (`redisUrl`) and a fresh schema of one PostgreSQL (`databaseUrl`), each with its own DATA_DIR (where
 * its operator socket lives) and `env` besides. After the block: servers stopped, schema dropped,
 * the counters of `keyIds` removed from Redis, data dirs deleted.
 */
export function serverPair(name: string, databaseUrl: string, redisUrl: string, env: Record<string, string> = {}): ServerPair {
  const schema = uniqueSchema(`e2e_${name}`)
  const dataDirs: string[] = []
  const servers: RunningServer[] = []
  const keyIds: string[] = []

  beforeAll(async () => {
    // The servers read only DATABASE_URL: postgres.js sends a `search_path` query parameter as a
    // connection setting, which isolates this suite in its own schema.
    const setup = await openPostgres(databaseUrl, { schema, max: 1 })
    await setup.close()
    const url = new URL(databaseUrl)
    url.searchParams.set('search_path', schema)
    // Servers start one after the other: the first creates the tables.
    for (const server of ['a', 'b']) {
      const dataDir = tempDataDir(`mirador-${name}-${server}-`)
      dataDirs.push(dataDir)
      servers.push(await startServer({ DATABASE_URL: url.toString(), REDIS_URL: redisUrl, DATA_DIR: dataDir, ...env }))
    }
  })

  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()))
    const db = await openPostgres(databaseUrl, { max: 1 })
    await db.exec(`drop schema if exists ${schema} cascade`)
    await db.close()
    // The servers use the production key prefix; the key ids are fresh, so their counters are this suite's.
    const raw = createClient({ url: redisUrl })
    await raw.on('error', () => {}).connect()
    for (const keyId of keyIds) {
      const counters = await raw.keys(`mirador:rl:${keyId}:*`)
      if (counters.length) await raw.del(counters)
    }
    raw.destroy()
    await Promise.all(dataDirs.map((dir) => rm(dir, { recursive: true, force: true })))
  })

  return {
    servers,
    keyIds,
    cli: <T>(...args: string[]) => cliJson<T>(servers[0]!, ...args),
  }
}

/** Runs an operator command through `server`'s socket with --json and returns its parsed output; fails loudly on a refusal. */
export async function cliJson<T = Record<string, unknown>>(server: RunningServer, ...args: string[]): Promise<T> {
  const result = await server.cli(...args, '--json')
  if (result.code !== 0) throw new Error(`cli ${args.join(' ')} exited ${result.code}: ${result.stdout}${result.stderr}`)
  return JSON.parse(result.stdout) as T
}
