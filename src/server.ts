/**
 * The server's start-up, the same on every runtime: configuration, then the components of
 * src/server-components.ts started in order (data directory, lock, ports, storage, read models,
 * rate limiter, operator socket on DATA_DIR/mirador.sock with the embedded store, API), stopped in
 * reverse order on SIGTERM or SIGINT. Anything that stops the start ends with one line on stderr and
 * exit code 1 (2 for configuration), before the store is touched where it can be. What a runtime adds
 * is only how it listens (`RuntimeEdge`, src/runtime/edge.ts), one small entry per runtime:
 * src/main.ts (Bun), src/main-node.ts (Node), src/main-deno.ts (Deno).
 */
import { ConfigError, type Config, loadConfig } from './config.ts'
import { isWriteToClosedConnection } from './db/postgres.ts'
import { StartFailed } from './runtime/components.ts'
import { type DependencyLog, DependencyUnavailable, isUnavailable } from './runtime/dependency.ts'
import type { RuntimeEdge } from './runtime/edge.ts'
import { bufferedJsonLogger, processOutput } from './runtime/log.ts'
import { PACKAGE_VERSION } from './runtime/version.ts'
import { eventsKeptIn, Refusal, serverComponents } from './server-components.ts'

/** How long a log line may wait in memory before it is written (lines are written in batches). */
const LOG_FLUSH_MS = 100
const log = bufferedJsonLogger(processOutput, Date.now)
/** How long a crashing process waits for its log to be written before it exits (then writes the rest at once). */
const CRASH_DRAIN_MS = 1000
// An outage is logged by its dependency, once when it starts and once when it ends, not per retry.
const reportError = (error: unknown) => {
  if (!isUnavailable(error)) log.error('background_error', { error: error instanceof Error ? error.message : String(error) })
}
const dependencyLog: DependencyLog = (event, fields) => log.info(event, fields)
const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error))

/** The setting that names each dependency's server, for the operator told why a start failed. */
const settingOf = (config: Config, error: DependencyUnavailable) =>
  error.dependency === 'event store' && config.esdbConnectionString ? 'ESDB_CONNECTION_STRING' : error.dependency === 'rate limiter' ? 'REDIS_URL' : 'DATABASE_URL'

/**
 * Why the start failed, for the operator's terminal: a dependency that did not answer is named with
 * its cause (which may hold an address: the operator's own, never a client's) and the setting to check.
 */
function startFailure(config: Config, cause: unknown): string {
  if (cause instanceof Refusal) return cause.message
  if (cause instanceof DependencyUnavailable) return `cannot start: the ${cause.dependency} is unavailable (${cause.reason}); check ${settingOf(config, cause)} and that the server runs`
  return `cannot start: ${messageOf(cause)}`
}

function refuseToStart(message: string, code = 1): never {
  log.flushNow()
  console.error(`mirador: ${message}`)
  process.exit(code)
}

type Started = Awaited<ReturnType<typeof serverComponents.start>>

/** Starts the server on `edge`'s runtime; returns once it listens (SIGTERM or SIGINT stop it). */
export async function runServer(edge: RuntimeEdge): Promise<void> {
  handleProcessExits()
  const started = Date.now()
  const config = configOrRefusal()
  let running: Started
  try {
    running = await serverComponents.start({ config, edge, log, reportError, dependencyLog })
  } catch (error) {
    if (!(error instanceof StartFailed)) throw error
    refuseToStart(startFailure(config, error.cause))
  }
  const { port, metricsPort, operatorSocket } = running.handles
  log.info('listening', {
    url: `http://${config.host}:${port.port}`,
    runtime: edge.runtime,
    version: PACKAGE_VERSION,
    store: config.databaseUrl ? 'postgres' : `pglite:${config.dataDir}`,
    events: eventsKeptIn(config),
    rate_limiter: config.redisUrl ? 'redis' : 'memory',
    operator_socket: operatorSocket?.path ?? null,
    metrics: metricsPort.server ? `http://${config.host}:${metricsPort.server.port}/metrics` : null,
    startup_ms: Date.now() - started,
  })
  process.on('SIGINT', () => void shutdown(running, 'SIGINT'))
  process.on('SIGTERM', () => void shutdown(running, 'SIGTERM'))
}

/** Writes the log on every way out; a crash is logged, then ends the process as it would without the handler. */
function handleProcessExits() {
  setInterval(log.flush, LOG_FLUSH_MS).unref()
  // Every way out (shutdown, refusal to start, a crash) writes what is still buffered; a shutdown
  // first waits for the batch being written in the background (SIGKILL: docs/decisions.md).
  process.on('exit', log.flushNow)
  process.on('uncaughtException', (error) => {
    if (isWriteToClosedConnection(error)) return
    log.error('uncaught_error', { error: messageOf(error), stack: error.stack })
    // The batch being written in the background finishes first, so that batches stay whole and in order.
    void Promise.race([log.drain(), new Promise((resolve) => setTimeout(resolve, CRASH_DRAIN_MS))]).finally(() => process.exit(1))
  })
}

/** The configuration from the environment; a bad value refuses the start (exit code 2). */
function configOrRefusal(): Config {
  try {
    return loadConfig(process.env)
  } catch (error) {
    if (error instanceof ConfigError) refuseToStart(error.message, 2)
    throw error
  }
}

let stopping = false
/** Stops every component in reverse start order (the API first: requests in progress finish), then exits 0. */
async function shutdown(running: Started, signal: string) {
  if (stopping) return
  stopping = true
  log.info('stopping', { signal })
  await running.stop()
  // The last line: a request answered before the signal may be logged after "stopping" (its line is
  // written after its answer is sent), never after this. Its line is written by a callback the
  // framework queued with setImmediate when it answered; the stop may end without the event loop
  // reaching them (seen on a busy machine), so one more turn lets every one queued before run first.
  await new Promise((resolve) => setImmediate(resolve))
  log.info('stopped', { signal })
  await log.drain()
  process.exit(0)
}
