import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process'
import { promisify } from 'node:util'
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from './server.ts'

/**
 * PostgreSQL and Redis servers of a test's own, on free ports, that the test may stop, freeze
 * (SIGSTOP) and start again: the shared ones on 5432 and 6379 are never touched. PostgreSQL is a new
 * cluster made with the Debian binaries (`initdb`, `pg_ctl`) as the `postgres` user, which needs
 * root; `unavailable()` says why a machine cannot, so suites can report the skip.
 */

const PG_BIN = (() => {
  const base = '/usr/lib/postgresql'
  if (!existsSync(base)) return null
  const version = readdirSync(base).sort().at(-1)
  return version ? join(base, version, 'bin') : null
})()

/** Why private servers cannot run here, or null when they can. */
export function unavailable(): string | null {
  if (!PG_BIN || !existsSync(join(PG_BIN, 'initdb'))) return 'no PostgreSQL server binaries under /usr/lib/postgresql'
  if (process.getuid?.() !== 0) return 'making a PostgreSQL cluster as the postgres user needs root'
  try {
    execFileSync('redis-server', ['--version'], { stdio: 'ignore' })
  } catch {
    return 'no redis-server'
  }
  return null
}

const runuser = (command: string, args: string[]) => ['-u', 'postgres', '--', join(PG_BIN!, command), ...args]
/**
 * Runs a PostgreSQL program as the postgres user without blocking this process: a test measuring
 * latencies meanwhile keeps its clock, and the receivers and clients of specs running beside it
 * (test/webhooks/outages.test.ts runs its scenarios at once) keep answering.
 */
const asPostgres = async (command: string, args: string[]) => void (await promisify(execFile)('runuser', runuser(command, args), { timeout: 60_000 }))

/** The process ids of a running cluster: the postmaster and every process it started. */
function clusterPids(dir: string): number[] {
  const pidFile = join(dir, 'postmaster.pid')
  if (!existsSync(pidFile)) return []
  const postmaster = Number(execFileSync('head', ['-n', '1', pidFile]).toString().trim())
  const children = execFileSync('ps', ['-o', 'pid=', '--ppid', String(postmaster)]).toString().split('\n').map(Number).filter(Boolean)
  return [postmaster, ...children]
}

/** A server of this test's own, which it may stop, start, freeze and thaw as an outage would. */
export type PrivateService = {
  /** `postgres://postgres@127.0.0.1:PORT/postgres` or `redis://127.0.0.1:PORT` */
  readonly url: string
  /** Killed at once (PostgreSQL: `pg_ctl stop -m immediate`): every connection dropped, as in a crash. Resolves once stopped. */
  stop(): Promise<void>
  /** Resolves once the server accepts connections. */
  start(): Promise<void>
  /** Every process of the server stopped (SIGSTOP): connections stay open and nothing answers. */
  freeze(): void
  thaw(): void
  dispose(): void | Promise<void>
}
export type PrivatePostgres = PrivateService
export type PrivateRedis = PrivateService

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const dir = mkdtempSync(join(tmpdir(), 'mirador-pg-'))
  chownSync(dir, Number(execFileSync('id', ['-u', 'postgres']).toString()), Number(execFileSync('id', ['-g', 'postgres']).toString()))
  await asPostgres('initdb', ['-D', dir, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8'])
  const port = await freePort()
  // fsync off: a stop kills processes, never the machine, so what was written survives. Commits stay
  // synchronous: an immediate stop must not lose a transaction the server already confirmed.
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off`
  const start = () => asPostgres('pg_ctl', ['-D', dir, '-w', '-l', join(dir, 'server.log'), '-o', options, 'start'])
  const signal = (name: 'SIGSTOP' | 'SIGCONT') => {
    for (const pid of clusterPids(dir)) {
      try {
        process.kill(pid, name)
      } catch {
        // gone meanwhile
      }
    }
  }
  await start()
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    stop: () => asPostgres('pg_ctl', ['-D', dir, '-m', 'immediate', '-w', 'stop']),
    start,
    freeze: () => signal('SIGSTOP'),
    thaw: () => signal('SIGCONT'),
    async dispose() {
      signal('SIGCONT')
      try {
        await asPostgres('pg_ctl', ['-D', dir, '-m', 'immediate', '-w', 'stop'])
      } catch {
        // already stopped
      }
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await freePort()
  let child: ChildProcess | null = null
  const start = async () => {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' })
    for (let i = 0; i < 100; i++) {
      try {
        execFileSync('redis-cli', ['-p', String(port), 'ping'], { stdio: 'ignore' })
        return
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    }
    throw new Error(`redis-server on port ${port} did not start`)
  }
  const stop = async () => {
    const running = child
    child = null
    if (!running || running.exitCode !== null) return
    running.kill('SIGCONT')
    const exited = new Promise((resolve) => running.once('exit', resolve))
    running.kill('SIGKILL')
    await exited
  }
  await start()
  return {
    url: `redis://127.0.0.1:${port}`,
    stop,
    start,
    freeze: () => void child?.kill('SIGSTOP'),
    thaw: () => void child?.kill('SIGCONT'),
    dispose: stop,
  }
}
