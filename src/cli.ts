/**
 * Operator CLI (Bun). With PostgreSQL it works on the database directly (any number of processes
 * may). With the embedded store the running server owns the files, so the CLI sends the command
 * to the server's socket; when no server runs, it opens the store itself (holding the lock).
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { ConfigError, loadConfig } from './config.ts'
import { type Progress, runOperatorCommand } from './operator/commands.ts'
import { type CliRequest, parseCli } from './operator/cli-args.ts'
import { formatResult } from './operator/format.ts'
import { type OperatorLine, errorLine } from './operator/socket-handler.ts'
import { DataDirBusy, lockDataDir } from './runtime/data-dir-lock.ts'
import { terminalProgress } from './runtime/progress.ts'
import { AppError, isAppError } from './shared/errors.ts'
import { cryptoRandom, systemClock } from './shared/random.ts'
import { openStorage } from './system.ts'

type Outcome = Extract<OperatorLine, { ok: boolean }>

async function viaSocket(socket: string, request: CliRequest, progress: Progress): Promise<Outcome | undefined> {
  let response: Response
  try {
    response = await fetch('http://localhost/command', {
      method: 'POST',
      body: JSON.stringify({ name: request.command, args: request.args }),
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

async function locally(config: ReturnType<typeof loadConfig>, request: CliRequest, progress: Progress): Promise<Outcome> {
  let unlock = () => {}
  try {
    if (!config.databaseUrl) unlock = lockDataDir(config.dataDir)
  } catch (error) {
    if (error instanceof DataDirBusy) {
      const busy = new AppError('service_unavailable', `${error.message} but its operator socket does not answer yet; retry in a moment`)
      return errorLine(busy)
    }
    throw error
  }
  const storage = await openStorage(config)
  try {
    const result = await runOperatorCommand({ ...storage, clock: systemClock, random: cryptoRandom, progress }, request.command, request.args)
    await storage.runner.catchUp()
    return { ok: true, result }
  } catch (error) {
    return errorLine(error)
  } finally {
    await storage.close()
    unlock()
  }
}

async function main(): Promise<number> {
  let request: CliRequest
  let config: ReturnType<typeof loadConfig>
  try {
    request = parseCli(process.argv.slice(2))
    config = loadConfig(process.env)
  } catch (error) {
    if (isAppError(error) || error instanceof ConfigError) {
      console.error(error.message)
      return 2
    }
    throw error
  }
  const bar = terminalProgress()
  const socket = join(config.dataDir, 'mirador.sock')
  const outcome =
    (!config.databaseUrl && existsSync(socket) ? await viaSocket(socket, request, bar.progress) : undefined) ??
    (await locally(config, request, bar.progress))
  bar.done()
  if (outcome.ok) {
    console.log(request.json ? JSON.stringify(outcome.result, null, 2) : formatResult(request.command, outcome.result))
    return 0
  }
  if (request.json) console.error(JSON.stringify(outcome, null, 2))
  else console.error(`error (${outcome.error}): ${outcome.message}`)
  return outcome.error === 'invalid_request' ? 2 : 1
}

process.exit(await main())
