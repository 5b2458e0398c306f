import { terminalProgress } from '../runtime/progress.ts'
import { parseWith } from '../shared/validate.ts'
import type { CliRequest } from './cli-args.ts'
import type { CommandLineFace, CommandPlace, OperatorCommand } from './command.ts'
import { operatorCommand } from './commands.ts'
import { type Outcome, type Send, errorLine } from './outcome.ts'
import { stderrLine } from './stderr.ts'

type RunRequest = Extract<CliRequest, { kind: 'run' }>

/**
 * Prints how a command ended (`--json`: the result or the error as JSON; nothing for an output with
 * nothing to say) and returns the exit code:
 * 0 done, 1 refused (or part of the input refused), 2 bad usage.
 */
export function report(request: RunRequest, outcome: Outcome, cli?: CommandLineFace): number {
  if (outcome.ok) {
    const print = cli?.resultStream?.(request.args as never) === 'stderr' ? (text: string) => stderrLine(text) : console.log
    const text = request.json || !cli ? JSON.stringify(outcome.result, null, 2) : cli.output(outcome.result as never)
    if (text !== '') print(text)
    return cli?.partlyRefused?.(outcome.result as never) ? 1 : 0
  }
  // JSON stays plain for the program that reads it.
  if (request.json) stderrLine(JSON.stringify(outcome, null, 2))
  else stderrLine(`error (${outcome.error}): ${outcome.message}`, 'error')
  return outcome.error === 'invalid_request' ? 2 : 1
}

/** The exit code of a command stopped by Ctrl-C: 128 + SIGINT, as shells report it. */
export const INTERRUPTED = 130

/**
 * What Ctrl-C does while a command runs. A client flow that can stop early (`ingest`: its face says
 * `interrupted`) is asked to: it waits for the batch on its way and prints the summary of what was
 * recorded; a second Ctrl-C (the first, for the other flows) stops at once. A
 * store command says what it leaves behind (the server goes on with it, or it stopped here) and the
 * CLI exits. Either way the progress bar's line is ended first.
 */
function onCtrlC(command: OperatorCommand, request: RunRequest, where: CommandPlace, bar: ReturnType<typeof terminalProgress>, stop: AbortController) {
  return () => {
    bar.done()
    if (command.kind === 'client' && command.cli.interrupted && !stop.signal.aborted) {
      stop.abort()
      console.error('interrupted: waiting for the lines on their way, then the summary (Ctrl-C again stops at once)')
      return
    }
    const said = command.kind === 'store' ? command.cli?.onCtrlC?.(request.args as never, where) : undefined
    const generic =
      command.kind === 'client'
        ? 'interrupted: stopped at once; what was on its way may be recorded: run the same command again (what is recorded records nothing new)'
        : where === 'server'
          ? 'interrupted: the server finishes the command all the same; its result is not shown'
          : 'interrupted: the command stopped'
    console.error(said ?? generic)
    process.exit(INTERRUPTED)
  }
}

/**
 * Runs a parsed command line through `send`, drawing progress on the terminal, `where` the store is
 * (the server's socket, or this process); returns the exit code (INTERRUPTED after Ctrl-C).
 */
export async function runCommandLine(request: RunRequest, send: Send, where: CommandPlace = 'here'): Promise<number> {
  const command = operatorCommand(request.command)!
  const bar = terminalProgress()
  const stop = new AbortController()
  const ctrlC = onCtrlC(command, request, where, bar, stop)
  process.on('SIGINT', ctrlC)
  let outcome: Outcome
  try {
    outcome = await runCommand(command, request, send, bar, stop.signal)
  } finally {
    process.off('SIGINT', ctrlC)
  }
  bar.done()
  const code = report(request, outcome, command.cli)
  return outcome.ok && command.cli?.interrupted?.(outcome.result as never) ? INTERRUPTED : code
}

async function runCommand(command: OperatorCommand, request: RunRequest, send: Send, bar: ReturnType<typeof terminalProgress>, interrupted: AbortSignal): Promise<Outcome> {
  switch (command.kind) {
    case 'store':
      return send(command.name, request.args, bar.progress)
    case 'client': {
      const warn = (line: string) => {
        bar.clear()
        stderrLine(line, 'warning')
      }
      try {
        const args = parseWith(command.args, request.args, `arguments of "${command.name}"`)
        return await command.flow(send, args as never, { progress: bar.progress, warn, interrupted })
      } catch (error) {
        return errorLine(error)
      }
    }
    default: {
      const never: never = command
      throw new Error(`unknown kind of command ${JSON.stringify(never)}`)
    }
  }
}
