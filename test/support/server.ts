import { type ChildProcess, spawn } from 'node:child_process'
import { cpSync, mkdtempSync, readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { inject } from 'vitest'
import { embeddedStoreDir } from '../../src/storage.ts'

const ROOT = resolve(import.meta.dirname, '../..')
export const BUN = join(ROOT, 'node_modules/.bin/bun')

/** The runtimes the server runs on; Bun is `npm start`. */
export const RUNTIMES = ['bun', 'node', 'deno'] as const
export type Runtime = (typeof RUNTIMES)[number]

/**
 * The command of `npm start` (Bun), `npm run start:node` or `npm run start:deno`, read from
 * package.json so that the tests run exactly what the README tells users to run, its program taken
 * from node_modules/.bin as npm does.
 */
export function serverCommand(runtime: Runtime): { program: string; args: string[] } {
  const scripts = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts
  // `exec` makes the runtime replace npm's shell, so that npm's signals reach it (test/e2e/npm-start.test.ts).
  const [program, ...args] = scripts[runtime === 'bun' ? 'start' : `start:${runtime}`]!.replace(/^exec /, '').split(' ')
  return { program: join(ROOT, 'node_modules/.bin', program!), args }
}

export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolvePort(port))
    })
  })
}

export const tempDataDir = (prefix = 'mirador-') => mkdtempSync(join(tmpdir(), prefix))

/**
 * A data directory whose embedded store is a copy of the run's fresh cluster (test/support/global-setup.ts):
 * the server skips initdb, 2–3 s of every start. Specs about a first start on an empty directory use
 * `tempDataDir`.
 */
export function initialisedDataDir(prefix = 'mirador-'): string {
  const dataDir = tempDataDir(prefix)
  cpSync(inject('pgliteTemplateDir'), embeddedStoreDir(dataDir), { recursive: true })
  return dataDir
}

/**
 * The child's environment: this process's, minus the store and limiter settings that the test runner
 * itself was given (a server meant to run embedded must not silently pick up CI's DATABASE_URL).
 */
export function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const inherited = { ...process.env }
  for (const name of ['DATABASE_URL', 'REDIS_URL', 'DATA_DIR', 'PORT', 'OPENAI_API_KEY', 'OPENAI_BASE_URL']) delete inherited[name]
  return { ...inherited, ...env }
}

export type CliResult = { code: number; stdout: string; stderr: string }

/**
 * Runs `PROGRAM ARGS…` from the repository root to its end, as an operator would, with `env` added to
 * a clean environment (childEnv); killed (and failing the test) after `timeoutMs`.
 */
export function runProgram(program: string, args: string[], env: Record<string, string>, timeoutMs = 60_000): Promise<CliResult> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(program, args, { cwd: ROOT, env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`${program} ${args.join(' ')} did not end in ${timeoutMs} ms:\n${stdout}${stderr}`))
    }, timeoutMs)
    child.stdout.on('data', (chunk) => (stdout += chunk))
    child.stderr.on('data', (chunk) => (stderr += chunk))
    child.once('error', reject)
    // 'close', not 'exit': the process may exit before what it wrote last is read from its pipes.
    child.once('close', (code) => {
      clearTimeout(timer)
      resolveRun({ code: code ?? -1, stdout, stderr })
    })
  })
}

/** Runs `bun src/cli.ts …` the way an operator would (`npm run cli -- …`). */
export const runCli = (args: string[], env: Record<string, string>): Promise<CliResult> => runProgram(BUN, ['src/cli.ts', ...args], env)

/** Starts the server (`bun src/main.ts` unless told) expecting it to refuse to start; resolves with its exit code and output. */
export function runServerToExit(env: Record<string, string>, runtime: Runtime = 'bun'): Promise<CliResult> {
  const { program, args } = serverCommand(runtime)
  return runProgram(program, args, { ACCESS_LOG: 'on', DEMO_SEED: 'off', HOST: '127.0.0.1', ...env }, 90_000)
}

export type RunningServer = {
  url: string
  port: number
  env: Record<string, string>
  /** Everything the server printed so far (stdout and stderr). */
  output(): string
  /** Asks the server to stop (SIGTERM unless told otherwise; SIGKILL kills it on the spot) and waits for it to exit. */
  stop(signal?: 'SIGTERM' | 'SIGINT' | 'SIGKILL'): Promise<void>
  cli(...args: string[]): Promise<CliResult>
  /** Resolves once the server logs that it listens (its start is over); rejects if it exits first or takes longer than `timeoutMs`. */
  listened: Promise<void>
}

/** How long `stop` lets the server shut down before it kills it (a loaded machine's PGlite closes slowly). */
const STOP_GRACE_MS = 30_000

/**
 * Starts the real server (`bun src/main.ts`, or the entry of `runtime`) and resolves once it logs
 * that it listens; with `untilListening: false`, at once (its `listened` says when).
 */
export async function startServer(
  env: Record<string, string>,
  { runtime = 'bun', timeoutMs = 60_000, untilListening = true }: { runtime?: Runtime; timeoutMs?: number; untilListening?: boolean } = {},
): Promise<RunningServer> {
  const port = Number(env.PORT ?? (await freePort()))
  const fullEnv = { ACCESS_LOG: 'on', DEMO_SEED: 'off', HOST: '127.0.0.1', ...env, PORT: String(port) }
  const { program, args } = serverCommand(runtime)
  const child: ChildProcess = spawn(program, args, {
    cwd: ROOT,
    env: childEnv(fullEnv),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout!.on('data', (chunk) => (output += chunk))
  child.stderr!.on('data', (chunk) => (output += chunk))
  // Once its pipes close: on 'exit' the last lines it wrote (the shutdown's 'stopped') may be unread yet.
  const exited = new Promise<number>((resolveExit) => child.once('close', (code) => resolveExit(code ?? -1)))
  const listened = new Promise<void>((ready, fail) => {
    const deadline = setTimeout(() => {
      clearInterval(check)
      // Not left running behind the failed test.
      child.kill('SIGKILL')
      fail(new Error(`server did not start in ${timeoutMs} ms:\n${output}`))
    }, timeoutMs)
    const check = setInterval(() => {
      if (output.includes('"event":"listening"')) {
        clearInterval(check)
        clearTimeout(deadline)
        ready()
      }
    }, 50)
    void exited.then((code) => {
      clearInterval(check)
      clearTimeout(deadline)
      fail(new Error(`server exited with ${code} before listening:\n${output}`))
    })
  })
  if (untilListening) await listened
  else listened.catch(() => {}) // the caller awaits it when it needs to
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    env: fullEnv,
    output: () => output,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null) return
      child.kill(signal)
      let killed = false
      const timer = setTimeout(() => {
        killed = child.kill('SIGKILL')
      }, STOP_GRACE_MS)
      await exited
      clearTimeout(timer)
      // A server killed here lost what it had not written: say so, rather than let a spec read a truncated log.
      if (killed && signal !== 'SIGKILL') throw new Error(`the server did not stop within ${STOP_GRACE_MS / 1000} s of ${signal} and was killed; its output:\n${output}`)
    },
    cli: (...args) => runCli(args, fullEnv),
    listened,
  }
}
