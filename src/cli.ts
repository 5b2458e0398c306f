/**
 * Operator CLI (Bun). With PostgreSQL it works on the database directly (any number of processes
 * may). With the embedded store the running server owns the files, so the CLI sends its commands to
 * the server's socket; when no server runs, it opens the store itself (holding the lock), but it
 * never creates one unless asked (`--init`): a mistyped DATA_DIR must not start a store of its own.
 * It names the store it works on, on stderr.
 */
import { existsSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import { ConfigError, loadConfig } from './config.ts'
import { type CliRequest, commandLine, UsageError } from './operator/cli-args.ts'
import { report, runCommandLine } from './operator/cli-run.ts'
import { stderrLine } from './operator/stderr.ts'
import type { CommandPlace } from './operator/command.ts'
import { operatorCommands, runOperatorCommand } from './operator/commands.ts'
import { type OperatorLine, type Outcome, type Send, errorLine } from './operator/outcome.ts'
import { DataDirBusy, lockDataDir } from './runtime/data-dir-lock.ts'
import { preparePrivateDataDir } from './runtime/data-dir.ts'
import type { Progress } from './runtime/progress.ts'
import { fail, isAppError } from './shared/errors.ts'
import { cryptoRandom, systemClock } from './shared/random.ts'
import { allProjections, embeddedStoreExists, openStorage } from './storage.ts'

type Config = ReturnType<typeof loadConfig>

/** Where commands run: the server behind its socket, or the store opened by this process. */
type Session = {
  run: Send
  close(): Promise<void>
  /** Which store, for the operator: `pglite /srv/data via the server's socket`. */
  store: string
  /** Where store commands run: in the server, or in this process. */
  where: CommandPlace
}

async function socketCall(socket: string, name: string, args: unknown, progress: Progress): Promise<Outcome | undefined> {
  let response: Response
  try {
    response = await fetch('http://localhost/command', {
      method: 'POST',
      body: JSON.stringify({ name, args }),
      headers: { 'content-type': 'application/json' },
      unix: socket,
    } as RequestInit)
  } catch {
    return undefined // a socket file left by a server that died: nobody answers
  }
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
  let buffer = ''
  for (;;) {
    const { value, done } = await reader.read()
    if (done) break
    buffer += value
    let newline: number
    while ((newline = buffer.indexOf('\n')) >= 0) {
      const line = JSON.parse(buffer.slice(0, newline)) as OperatorLine
      buffer = buffer.slice(newline + 1)
      if ('progress' in line) progress(line.progress)
      else return line as Outcome
    }
  }
  return { ok: false, error: 'internal', message: 'the server closed the connection without an answer' }
}

async function socketSession(socket: string, store: string): Promise<Session | undefined> {
  const probe = await socketCall(socket, 'projections status', {}, () => {})
  if (!probe) return undefined
  return {
    store,
    where: 'server',
    run: async (name, args, progress) =>
      (await socketCall(socket, name, args, progress)) ?? { ok: false, error: 'service_unavailable', message: 'the server stopped answering' },
    close: async () => {},
  }
}

async function localSession(config: Config, store: string): Promise<Session> {
  const unlock = config.databaseUrl ? () => {} : lockDataDir(config.dataDir)
  try {
    const storage = await openStorage(config)
    return {
      store,
      where: 'here',
      async run(name, args, progress) {
        try {
          return { ok: true, result: await runOperatorCommand({ ...storage, clock: systemClock, random: cryptoRandom, progress }, name, args) }
        } catch (error) {
          return errorLine(error)
        }
      },
      async close() {
        // Leave the read models current for the next server start.
        await storage.runner.catchUp()
        await storage.close()
        unlock()
      },
    }
  } catch (error) {
    unlock()
    throw error
  }
}

/** A PostgreSQL URL without its password, for messages. */
function redactedUrl(url: string): string {
  try {
    const parsed = new URL(url)
    if (parsed.password) parsed.password = '***'
    return parsed.toString()
  } catch {
    return 'postgres (DATABASE_URL is not a valid URL)'
  }
}

async function openSession(config: Config, init: boolean): Promise<Session> {
  if (config.databaseUrl) return localSession(config, `postgres ${redactedUrl(config.databaseUrl)}`)
  const dataDir = resolve(config.dataDir)
  const socket = join(dataDir, 'mirador.sock')
  if (existsSync(socket)) {
    const remote = await socketSession(socket, `pglite ${dataDir} via the server's socket ${socket}`)
    if (remote) return remote
  }
  const exists = embeddedStoreExists(dataDir)
  if (!exists && !init) {
    throw fail.notFound(
      `no store in ${dataDir} (DATA_DIR=${config.dataDir}). Start the server first (npm start creates the store and seeds the demo market), ` +
        'set DATA_DIR to the data directory of your server, or add --init to create an empty store there',
    )
  }
  // Like the server: the directory created 0700, every file the store writes 0600 (umask).
  preparePrivateDataDir(dataDir)
  try {
    return await localSession(config, `pglite ${dataDir} (${exists ? 'server not running' : 'created by --init'})`)
  } catch (error) {
    if (error instanceof DataDirBusy) {
      throw fail.serviceUnavailable(`${error.message} but its operator socket does not answer yet; retry in a moment`)
    }
    throw error
  }
}

/**
 * How the user ran the CLI, for the usage lines: `npm run -s cli --` (npm names the script it runs in
 * npm_lifecycle_event; shown with -s, the form whose stdout is only the CLI's), `npx mirador` (the
 * package's bin, bin/mirador, says so in MIRADOR_INVOCATION), else `bun src/cli.ts` as typed in the
 * Docker image, which has no npm.
 */
const invocation =
  process.env.npm_lifecycle_event === 'cli'
    ? 'npm run -s cli --'
    : process.env.MIRADOR_INVOCATION || `bun ${relative(process.cwd(), process.argv[1]!)}`

async function main(): Promise<number> {
  let request: CliRequest
  let config: Config
  try {
    const cli = commandLine(operatorCommands, { projections: allProjections.map((p) => p.name), invocation })
    // npm runs scripts from the repository root; INIT_CWD is where the user typed the command.
    request = cli.parse(process.argv.slice(2), process.env.INIT_CWD || process.cwd())
    config = loadConfig(process.env)
  } catch (error) {
    if (error instanceof UsageError) {
      stderrLine(error.message, 'error')
      stderrLine(`\n${error.help}`)
      return 2
    }
    if (isAppError(error) || error instanceof ConfigError) {
      stderrLine(error.message, 'error')
      return 2
    }
    throw error
  }
  if (request.kind === 'help') {
    console.log(request.text)
    return 0
  }
  let session: Session
  try {
    session = await openSession(config, request.init)
  } catch (error) {
    return report(request, errorLine(error))
  }
  // Not with --json, whose stderr carries only the JSON error.
  if (!request.json) stderrLine(`store: ${session.store}`)
  try {
    return await runCommandLine(request, session.run, session.where)
  } finally {
    await session.close()
  }
}

process.exit(await main())
