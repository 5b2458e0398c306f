import { spawn } from 'node:child_process'
import { resolve } from 'node:path'
import { eventually } from './eventually.ts'
import { BUN, childEnv } from './server.ts'

const ROOT = resolve(import.meta.dirname, '../..')

export type TerminalRun = {
  /** Everything the terminal showed so far (stdout and stderr, as the user sees them; `\r` kept). */
  output(): string
  /** Types on the keyboard: `\x03` is Ctrl-C (the terminal sends SIGINT to the command). */
  type(keys: string): void
  /** Resolves once the output matches `pattern`. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<void>
  /** The command's exit code. */
  exited: Promise<number>
}

/**
 * Runs `bun src/cli.ts ARGS` from the repository root on a pseudo-terminal (util-linux `script`), as
 * an operator at a terminal does: the progress bar is drawn, and Ctrl-C reaches the command through
 * the terminal. Killed after `timeoutMs`.
 */
export function runCliInTerminal(args: string[], env: Record<string, string>, timeoutMs = 120_000): TerminalRun {
  const command = [BUN, 'src/cli.ts', ...args].map((word) => `'${word.replace(/'/g, `'\\''`)}'`).join(' ')
  const child = spawn('script', ['--quiet', '--flush', '--return', '--command', `exec ${command}`, '/dev/null'], {
    cwd: ROOT,
    env: childEnv(env),
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout!.on('data', (chunk) => (output += chunk))
  child.stderr!.on('data', (chunk) => (output += chunk))
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
  const exited = new Promise<number>((resolveExit) =>
    child.once('close', (code) => {
      clearTimeout(timer)
      resolveExit(code ?? -1)
    }),
  )
  return {
    output: () => output,
    type: (keys) => child.stdin!.write(keys),
    waitFor: (pattern, waitMs = 60_000) => eventually(`the terminal shows ${pattern}`, async () => pattern.test(output), waitMs),
    exited,
  }
}
