import postgres from 'postgres'
import { DependencyUnavailable } from '../runtime/dependency.ts'
import type { Db, Row, Sql } from './port.ts'

/** Socket errors and postgres.js's own connection errors: the server is not there, or went away. */
const CONNECTION_ERRORS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
])

/**
 * A failure that says PostgreSQL cannot be reached becomes the read models' 503 (classes 08,
 * connection exception, and 57P, shutting down or starting; 53300, too many connections); any other
 * is an answer and stays what it is.
 */
export function mapPostgresError(error: unknown): unknown {
  const code = (error as { code?: unknown } | null)?.code
  if (typeof code !== 'string') return error
  if (CONNECTION_ERRORS.has(code) || code.startsWith('08') || code.startsWith('57P') || code === '53300') {
    return new DependencyUnavailable('read-model database', `${code}: ${(error as Error).message}`)
  }
  return error
}

/**
 * postgres.js 3.4.9 may flush a small write, from setImmediate, to a connection that closed
 * meanwhile (porsager/postgres issues 1066, 1154 and 1208): an uncaught TypeError that would end the
 * process. The queries of that connection were rejected when it closed (CONNECTION_CLOSED), so the
 * lost write lost nothing; src/server.ts ignores exactly this error.
 */
export const isWriteToClosedConnection = (error: unknown): boolean =>
  error instanceof TypeError && /socket\.write|reading 'write'/.test(error.message) && /postgres\/src\/connection\.js/.test(error.stack ?? '') && /nextWrite/.test(error.stack ?? '')

const mapped = <T>(promise: Promise<T>): Promise<T> =>
  promise.catch((error) => {
    throw mapPostgresError(error)
  })

export type PostgresOptions = {
  /** Pool size. */
  max?: number
  /** Schema to create (if missing) and use; isolates test suites sharing one database. */
  schema?: string
}

/** PostgreSQL over postgres.js. Statements are prepared (cached per connection) for speed. */
export async function openPostgres(url: string, options: PostgresOptions = {}): Promise<Db> {
  // `?search_path=name` in DATABASE_URL selects (and creates) a schema, e.g. to run several stacks on one database.
  const schema = options.schema ?? new URL(url).searchParams.get('search_path') ?? undefined
  if (schema && !/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`bad schema name ${schema}`)
  const sql = postgres(url, {
    max: options.max ?? 10,
    // Seconds; the default (30) would let a server that drops packets hold every caller that long.
    connect_timeout: 2,
    // Seconds before a closed connection is opened again. postgres.js's default grows with every
    // failure in the pool (up to 20 s), which kept the API away for seconds after the database returned.
    backoff: () => 0.1,
    onnotice: () => {},
    connection: {
      application_name: 'mirador',
      // Plan every execution for its values: after five runs PostgreSQL may switch a prepared statement
      // to a generic plan, which for skewed read models is far worse (listing search: 80 ms instead of 16).
      plan_cache_mode: 'force_custom_plan',
      ...(schema ? { search_path: schema } : {}),
    },
  })
  if (schema) await sql.unsafe(`create schema if not exists ${schema}`)
  const wrap = (q: postgres.Sql | postgres.TransactionSql): Sql => ({
    async query<T extends Row>(text: string, params: readonly unknown[] = []) {
      const rows = await mapped(q.unsafe(text, params as postgres.ParameterOrJSON<never>[], { prepare: true }))
      return rows as unknown as T[]
    },
  })
  const root = wrap(sql)
  return {
    kind: 'postgres',
    query: root.query,
    async exec(script) {
      await mapped(sql.unsafe(script))
    },
    transaction: (work) => mapped(sql.begin((tx) => work(wrap(tx))) as Promise<never>),
    async listen(channel, onNotify) {
      const listener = await mapped(sql.listen(channel, onNotify))
      return () => listener.unlisten()
    },
    async close() {
      await sql.end({ timeout: 5 })
    },
  }
}
