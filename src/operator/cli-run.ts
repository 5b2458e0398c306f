import { terminalProgress } from '../runtime/progress.ts'
import { parseWith } from '../shared/validate.ts'
import type { CliRequest } from './cli-args.ts'
import type { CommandLineFace } from './command.ts'
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

/** Runs a parsed command line through `send`, drawing progress on the terminal; returns the exit code. */
export async function runCommandLine(request: RunRequest, send: Send): Promise<number> {
  const command = operatorCommand(request.command)!
  const bar = terminalProgress()
  let outcome: Outcome
  switch (command.kind) {
    case 'store':
      outcome = await send(command.name, request.args, bar.progress)
      break
    case 'client': {
      const warn = (line: string) => {
        bar.clear()
        stderrLine(line, 'warning')
      }
      try {
        const args = parseWith(command.args, request.args, `arguments of "${command.name}"`)
        outcome = await command.flow(send, args as never, { progress: bar.progress, warn })
      } catch (error) {
        outcome = errorLine(error)
      }
      break
    }
    default: {
      const never: never = command
      throw new Error(`unknown kind of command ${JSON.stringify(never)}`)
    }
  }
  bar.done()
  return report(request, outcome, command.cli)
}
