import { writeAllSync } from '../runtime/log.ts'

/** What a line on stderr is: information (the store, a result written there), a warning or an error. */
export type Tone = 'info' | 'warning' | 'error'

const COLOURS: Record<Tone, string | null> = { info: null, warning: '\x1b[33m', error: '\x1b[31m' }

/**
 * Whether stderr gets colours: never with NO_COLOR set (no-color.org), always with FORCE_COLOR set
 * (and not `0`), else only on a terminal.
 */
export function colourWanted(env: Record<string, string | undefined>, isTTY: boolean): boolean {
  if (env.NO_COLOR) return false
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '' && env.FORCE_COLOR !== '0') return true
  return isTTY
}

/**
 * The CLI's lines on stderr, written at once (the CLI exits right after its last line): errors in
 * red and warnings in yellow when colours are wanted, information always plain. Not `console.error`,
 * which Bun prints in red on a terminal whatever the line says.
 */
export function stderrLine(text: string, tone: Tone = 'info', colour = colourWanted(process.env, process.stderr.isTTY === true)): void {
  const code = colour ? COLOURS[tone] : null
  writeAllSync(2, code ? `${code}${text}\x1b[0m\n` : `${text}\n`)
}
