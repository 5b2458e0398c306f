import { isAbsolute, resolve } from 'node:path'
import { KindGuard, type TObject } from '@sinclair/typebox'
import { AppError } from '../shared/errors.ts'
import { inputErrors } from '../shared/input-schema.ts'
import { checker } from '../shared/validate.ts'
import type { CommandLineFace, HelpTerms, HelpText, OperatorCommand, Param } from './command.ts'
import { closest } from './suggest.ts'

/** A parsed command line: an operator command with its arguments, or a request for help. */
export type CliRequest =
  | {
      kind: 'run'
      command: string
      args: Record<string, unknown>
      json: boolean
      /** Create an empty embedded store if there is none (the CLI never does so implicitly). */
      init: boolean
    }
  | { kind: 'help'; text: string }

/** A parameter as the command line sees it, read from its schema. */
type Option = {
  /** Name of the argument it sets (`key_id`). */
  arg: string
  /** `--key-id`, or the placeholder of a positional. */
  label: string
  placeholder: string
  help: string
  required: boolean
  list: boolean
  integer: boolean
  path: boolean
  boolean: boolean
}

/** A command as the parser and the help need it. */
type Usage = { name: string; summary: string; flags: Option[]; positional: Option | undefined; notes: string | undefined; args: TObject }

/**
 * A command line that cannot be run (exit code 2): what is wrong, and the help of the command it
 * names, or the list of commands. The help is kept apart from the message, which is cut at 600
 * characters like every error message.
 */
export class UsageError extends AppError {
  constructor(
    message: string,
    readonly help: string,
  ) {
    super('invalid_request', message)
  }
}

const globalOptions = (invocation: string) => `options for every command:
  --json        machine-readable JSON on stdout (errors as JSON on stderr)
  --init        create an empty embedded store in DATA_DIR if there is none (never done implicitly)
  --help, -h    this help, or a command's: ${invocation} key issue --help`

const FOOTER = `With DATABASE_URL the CLI works on PostgreSQL. Otherwise it goes through the running server's
socket (DATA_DIR/mirador.sock) or, with no server running, opens the embedded store in DATA_DIR
itself (default ./data, relative to the repository root). It names the store on stderr.
Exit codes: 0 done, 1 refused, failed or part of the input refused (reasons on stderr),
2 bad usage or configuration, 130 interrupted (Ctrl-C).`

function optionOf(arg: string, param: Param, terms: HelpTerms): Option {
  const said = (t: HelpText) => (typeof t === 'string' ? t : t(terms))
  const list = KindGuard.IsArray(param.schema)
  return {
    arg,
    label: param.positional ? (param.placeholder ?? arg) : `--${arg.replaceAll('_', '-')}`,
    placeholder: param.placeholder ?? '',
    help: said(param.help),
    // An array given by position takes every such word, none included.
    required: !KindGuard.IsOptional(param.schema) && !(param.positional && list),
    list,
    integer: KindGuard.IsInteger(param.schema),
    path: param.path ?? false,
    boolean: KindGuard.IsBoolean(param.schema),
  }
}

function usageOf(name: string, args: TObject, cli: CommandLineFace, terms: HelpTerms): Usage {
  const options = Object.entries(cli.params).map(([arg, param]) => [param.positional, optionOf(arg, param, terms)] as const)
  const notes = cli.notes === undefined ? undefined : typeof cli.notes === 'string' ? cli.notes : cli.notes(terms)
  return {
    name,
    summary: cli.summary,
    flags: options.filter(([positional]) => !positional).map(([, o]) => o),
    positional: options.find(([positional]) => positional)?.[1],
    notes,
    args,
  }
}

/** `--id ID`, `[--label TEXT]`, `[--hold]`. */
function optionText(flag: Option): string {
  const text = flag.boolean ? flag.label : `${flag.label} ${flag.placeholder}`
  return flag.required ? text : `[${text}]`
}

function synopsis(command: Usage): string {
  const p = command.positional
  const positional = p ? [p.list ? `[${p.placeholder}...]` : p.required ? p.placeholder : `[${p.placeholder}]`] : []
  return [command.name, ...positional, ...command.flags.map(optionText)].join(' ')
}

const listing = (commands: readonly Usage[]) => commands.map((c) => `  ${synopsis(c)}\n      ${c.summary}`).join('\n')

/** The help texts of `usages`, the CLI run as `run`, and usage errors that carry the fitting one. */
function helpTexts(usages: ReadonlyMap<string, Usage>, run: string) {
  const GLOBAL_OPTIONS = globalOptions(run)

  /** Every command, one synopsis line and its summary each. */
  const usage = () => `usage: ${run} <command> [options]\n\n${listing([...usages.values()])}\n\n${GLOBAL_OPTIONS}\n\n${FOOTER}`

  /** One command's help: synopsis, summary, each argument, notes. */
  function commandHelp(command: Usage): string {
    const rows = [...(command.positional ? [[command.positional.placeholder, command.positional.help]] : []), ...command.flags.map((f) => [optionText(f), f.help])]
    const width = Math.max(0, ...rows.map(([left]) => left!.length))
    const table = rows.map(([left, right]) => `  ${left!.padEnd(width)}  ${right}`).join('\n')
    return [
      `usage: ${run} ${synopsis(command)}`,
      '',
      command.summary,
      ...(table ? ['', table] : []),
      ...(command.notes ? ['', command.notes] : []),
      '',
      GLOBAL_OPTIONS,
    ].join('\n')
  }

  /** The commands of a group (`key` → key issue, key revoke, key list). */
  function groupHelp(group: string): string | undefined {
    const members = [...usages.values()].filter((c) => c.name.split(' ')[0] === group)
    if (members.length === 0) return undefined
    return `usage: ${run} ${group} <command> [options]\n\n${listing(members)}\n\n${run} ${group} <command> --help shows a command's options.`
  }

  /** What is wrong, with the named command's own help, else its group's, else the list of commands. */
  const usageError = (message: string, command?: Usage, group?: string) =>
    new UsageError(message, command ? commandHelp(command) : ((group && groupHelp(group)) || usage()))

  return { usage, commandHelp, groupHelp, usageError }
}
type HelpTexts = ReturnType<typeof helpTexts>

/** Each bad argument by the flag or placeholder the user typed, with what it expects in words. */
function badArguments(command: Usage, args: Record<string, unknown>): string | undefined {
  if (checker(command.args).Check(args)) return undefined
  const labels = new Map([...command.flags, ...(command.positional ? [command.positional] : [])].map((o) => [o.arg, o.label]))
  return inputErrors(command.args, args, 'arguments')
    .map(({ field, message }) => `${labels.get(field.split('.')[0]!) ?? field}: ${message}`)
    .join('; ')
}

/** The options every command takes, beside its own. */
const GLOBAL_FLAGS = ['--json', '--init', '--help']

/** `unknown command "owner craete"; did you mean "owner create"?` when the first words are a typo of a command's name. */
function unknownCommand(usages: ReadonlyMap<string, Usage>, words: readonly string[]): string {
  const names = [...usages.keys()]
  const meant = closest(words.slice(0, 2).join(' '), names) ?? closest(words[0] ?? '', names.filter((name) => !name.includes(' ')))
  return `unknown command "${words.slice(0, 2).join(' ')}"${meant ? `; did you mean "${meant}"?` : ''}`
}

/** The command named by the first one or two words (`ingest`, `key issue`), if any. */
const commandOf = (usages: ReadonlyMap<string, Usage>, words: readonly string[]): Usage | undefined =>
  usages.get(words[0] ?? '') ?? usages.get(`${words[0] ?? ''} ${words[1] ?? ''}`)

function helpFor(usages: ReadonlyMap<string, Usage>, help: HelpTexts, words: readonly string[]): CliRequest {
  if (words.length === 0) return { kind: 'help', text: help.usage() }
  const command = commandOf(usages, words)
  if (command) return { kind: 'help', text: help.commandHelp(command) }
  const group = help.groupHelp(words[0]!)
  if (group) return { kind: 'help', text: group }
  throw help.usageError(unknownCommand(usages, words), undefined, words[0])
}

/** How the words after a command's name are read: relative paths resolved, errors with the command's help. */
type Reading = { command: Usage; asPath(value: string): string; usageError: HelpTexts['usageError'] }

/** The flags' values among `words` (after the command's name) into `args`; the other words, in order. */
function readFlags({ command, asPath, usageError }: Reading, words: readonly string[], args: Record<string, unknown>): string[] {
  const positionals: string[] = []
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!
    if (!word.startsWith('--')) {
      positionals.push(word)
      continue
    }
    const eq = word.indexOf('=')
    const label = word.slice(0, eq < 0 ? undefined : eq)
    const flag = command.flags.find((f) => f.label === label)
    if (!flag) {
      const meant = closest(label, [...command.flags.map((f) => f.label), ...GLOBAL_FLAGS])
      throw usageError(`"${command.name}" has no option ${label}${meant ? `; did you mean ${meant}?` : ''}`, command)
    }
    if (flag.boolean) {
      if (eq >= 0) throw usageError(`${label} takes no value`, command)
      args[flag.arg] = true
      continue
    }
    const value = eq < 0 ? words[++i] : word.slice(eq + 1)
    if (value === undefined || (eq < 0 && value.startsWith('--'))) throw usageError(`${label} needs a value`, command)
    args[flag.arg] = flag.list
      ? value.split(',').map((s) => s.trim()).filter(Boolean)
      : flag.integer && /^[0-9]+$/.test(value)
        ? Number(value)
        : flag.path
          ? asPath(value)
          : value
  }
  return positionals
}

/** The words that are not flags, as the command's positional argument (one, or a list) into `args`. */
function readPositionals({ command, asPath, usageError }: Reading, positionals: readonly string[], args: Record<string, unknown>): void {
  const positional = command.positional
  if (!positional) {
    if (positionals.length > 0) throw usageError(`unexpected argument "${positionals[0]}"`, command)
    return
  }
  const values = positional.path ? positionals.map(asPath) : positionals
  if (positional.list) args[positional.arg] = values
  else if (values[0] !== undefined) args[positional.arg] = values[0]
  if (!positional.list && values.length > 1) throw usageError(`"${command.name}" takes one ${positional.placeholder}`, command)
}

/**
 * The operator command line of `commands` (those with a `cli` face): its parser and every help
 * text. `terms` are the names help texts take from the composition root.
 */
export function commandLine(commands: readonly OperatorCommand[], terms: HelpTerms) {
  const usages = new Map(commands.flatMap((c) => (c.cli ? [[c.name, usageOf(c.name, c.args, c.cli, terms)] as const] : [])))
  const help = helpTexts(usages, terms.invocation)
  const { usageError } = help

  /**
   * Pure: argv (after `cli`) → the operator command and its arguments, or help, or a usage error.
   * `cwd` is where the user ran the command: relative file arguments are resolved from it.
   */
  function parse(argv: readonly string[], cwd: string): CliRequest {
    const json = argv.includes('--json')
    const init = argv.includes('--init')
    const wantsHelp = argv.some((a) => a === '--help' || a === '-h') || argv[0] === 'help'
    const words = argv.filter((a, i) => a !== '--json' && a !== '--init' && a !== '--help' && a !== '-h' && !(i === 0 && a === 'help'))
    if (wantsHelp) return helpFor(usages, help, words.filter((w) => !w.startsWith('--')))

    const command = commandOf(usages, words)
    if (!command) throw usageError(words.length > 0 ? unknownCommand(usages, words) : 'no command given', undefined, words[0])
    const name = command.name
    const reading: Reading = { command, asPath: (value) => (isAbsolute(value) ? value : resolve(cwd, value)), usageError }
    const args: Record<string, unknown> = {}
    readPositionals(reading, readFlags(reading, words.slice(name.split(' ').length), args), args)
    const missing = [...command.flags, ...(command.positional ? [command.positional] : [])].filter((o) => o.required && args[o.arg] === undefined).map((o) => o.label)
    if (missing.length > 0) throw usageError(`"${name}" needs ${missing.join(', ')}`, command)
    // Checked here, before any store is opened (or created by --init): a bad value is a usage error.
    const bad = badArguments(command, args)
    if (bad) throw usageError(`"${name}": ${bad}`, command)
    return { kind: 'run', command: name, args, json, init }
  }

  return { parse, usage: help.usage }
}
