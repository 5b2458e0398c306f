import postgres from 'postgres'
import { DependencyUnavailable, inRequest } from '../runtime/dependency.ts'
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

/** Seconds a connection may take to open: past it, the statements waiting for it fail (CONNECT_TIMEOUT). */
const CONNECT_TIMEOUT_S = 2
/**
 * How long work outside requests (start-up, demo seeding, projections, commands) keeps opening
 * connections for a statement whose connection did not open within CONNECT_TIMEOUT_S: postgres.js's
 * own connect timeout, given as a whole to the work that has no request's bound.
 */
export const PATIENT_CONNECT_MS = 30_000

/** PostgreSQL refused to open the connection: every slot is taken (max_connections), by this machine's other processes. */
const NO_SLOT = '53300'
/**
 * The connection of the statement did not open, in time or at all for want of a slot: the statement
 * was never sent, so it may be sent again. (53300 comes only while a connection starts.)
 */
const neverOpened = (error: unknown): boolean => {
  const code = (error as { code?: unknown } | null)?.code
  return code === 'CONNECT_TIMEOUT' || code === NO_SLOT
}
/** Pause before opening again after a refusal for want of a slot (a connect timeout has waited already). */
const SLOT_RETRY_MS = 100

/**
 * Sends `statement`, and, outside requests, sends it again while its connection did not open in time,
 * or could not open for want of a slot (53300, every one of max_connections taken by other
 * processes), for up to PATIENT_CONNECT_MS. A PostgreSQL saturated by a busy machine can take more than
 * CONNECT_TIMEOUT_S to open a connection; that bound is for requests, which have a second at most
 * (src/runtime/dependency.ts): start-up work such as seeding the demo failed on it with "the
 * read-model database is unavailable" (test/demo/seed-slow-database.test.ts). A request's statement
 * is never sent again: it fails as before, its request answered 503. `again` says whether the
 * statement may still be sent again (a transaction whose work began may not).
 */
async function sent<T>(statement: () => Promise<T>, patient: boolean, again: () => boolean = () => true): Promise<T> {
  const began = performance.now()
  for (;;) {
    try {
      return await statement()
    } catch (error) {
      if (!patient || !neverOpened(error) || inRequest() || !again() || performance.now() - began >= PATIENT_CONNECT_MS) throw mapPostgresError(error)
      if ((error as { code?: unknown }).code === NO_SLOT) await new Promise((resolve) => setTimeout(resolve, SLOT_RETRY_MS))
    }
  }
}

export type PostgresOptions = {
  /** Pool size. */
  max?: number
  /** Schema to create (if missing) and use; isolates test suites sharing one database. */
  schema?: string
  /**
   * Whether work outside requests waits for connections slow to open (`sent`; default true). The
   * monitor's probes do not: a probe measures the server as it answers now. The schema is created
   * patiently either way (opening is start-up work).
   */
  patient?: boolean
}

/** PostgreSQL over postgres.js. Statements are prepared (cached per connection) for speed. */
export async function openPostgres(url: string, options: PostgresOptions = {}): Promise<Db> {
  // `?search_path=name` in DATABASE_URL selects (and creates) a schema, e.g. to run several stacks on one database.
  const schema = options.schema ?? new URL(url).searchParams.get('search_path') ?? undefined
  if (schema && !/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`bad schema name ${schema}`)
  const settings = (connectTimeout: number): postgres.Options<Record<string, postgres.PostgresType>> => ({
    max: options.max ?? 10,
    connect_timeout: connectTimeout,
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
  // Seconds; the default (30) would let a server that drops packets hold every caller that long.
  // Work outside requests is given longer by sending its statement again (`sent`).
  const sql = postgres(url, settings(CONNECT_TIMEOUT_S))
  const patient = options.patient ?? true
  /**
   * LISTEN is never a request's: it is opened at start-up and again by postgres.js after its connection
   * is lost, on a connection of its own, which a patient database lets take PATIENT_CONNECT_MS to open.
   * (A LISTEN cannot be sent again as a statement is: postgres.js keeps the listener of a failed one
   * and listens for it again by itself, which would then be told every notification twice.)
   */
  let listening: postgres.Sql | undefined
  const listener = () => (patient ? (listening ??= postgres(url, settings(PATIENT_CONNECT_MS / 1000))) : sql)
  // Opening is start-up work, for the probes' connection too.
  if (schema) await sent(() => sql.unsafe(`create schema if not exists ${schema}`), true)
  // Within a transaction the connection is open: its statements are sent once.
  const wrap = (q: postgres.TransactionSql): Sql => ({
    async query<T extends Row>(text: string, params: readonly unknown[] = []) {
      const rows = await mapped(q.unsafe(text, params as postgres.ParameterOrJSON<never>[], { prepare: true }))
      return rows as unknown as T[]
    },
  })
  return {
    kind: 'postgres',
    async query<T extends Row>(text: string, params: readonly unknown[] = []) {
      const rows = await sent(() => sql.unsafe(text, params as postgres.ParameterOrJSON<never>[], { prepare: true }), patient)
      return rows as unknown as T[]
    },
    async exec(script) {
      await sent(() => sql.unsafe(script), patient)
    },
    transaction(work) {
      // Begun again only if its work never started: the connection for BEGIN did not open.
      let started = false
      const begin = () =>
        sql.begin((tx) => {
          started = true
          return work(wrap(tx))
        }) as Promise<never>
      return sent(begin, patient, () => !started)
    },
    async listen(channel, onNotify) {
      const listened = await mapped(listener().listen(channel, onNotify))
      return () => listened.unlisten()
    },
    async close() {
      await Promise.all([sql.end({ timeout: 5 }), listening?.end({ timeout: 5 })])
    },
  }
}
