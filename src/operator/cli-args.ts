import { isAbsolute, resolve } from 'node:path'
import { AppError } from '../shared/errors.ts'

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

type Flag = {
  /** Name of the command argument it sets. */
  arg: string
  /** Placeholder or the allowed values, as shown in usage (`ID`, `free|pro|enterprise|admin`). */
  value: string
  help: string
  required?: boolean
  /** Comma-separated list. */
  list?: boolean
  integer?: boolean
  /** A file path: relative paths are resolved from where the user ran the command. */
  path?: boolean
  /** A switch that takes no value (`--hold`). */
  boolean?: boolean
}

type Positional = { arg: string; value: string; help: string; required?: boolean; rest?: boolean; path?: boolean }

type Spec = {
  /** One line: what the command does. */
  summary: string
  flags: Record<string, Flag>
  positional?: Positional
  /** Further lines of `--help`. */
  notes?: string
}

const actor = (help = 'who does it: the owner itself or an active admin'): Flag => ({ arg: 'actor', value: 'ID', help, required: true })
const TIERS = 'free|pro|enterprise|admin'
const PROJECTION_NAMES = 'owners, api_keys, listings, briefing_cache, briefing_usage'

/** Every command of the CLI: the parser and every `--help` text are generated from this one table. */
const SPECS: Record<string, Spec> = {
  'owner create': {
    summary: 'register an owner (an API customer)',
    flags: {
      id: { arg: 'id', value: 'ID', help: 'lowercase letters, digits, "_", "." and "-", e.g. acme-corp', required: true },
      tier: { arg: 'tier', value: TIERS, help: 'free has no API access; admin is unlimited and may issue keys for others', required: true },
      actor: { arg: 'actor', value: 'ID', help: 'recorded as who did it (default: operator)' },
    },
  },
  'owner set-tier': {
    summary: "change an owner's tier",
    flags: {
      id: { arg: 'id', value: 'ID', help: 'the owner', required: true },
      tier: { arg: 'tier', value: TIERS, help: 'the new tier', required: true },
      actor: actor('recorded as who did it'),
    },
  },
  'owner deactivate': {
    summary: "deactivate an owner: all its keys answer 401 invalid_key until it is activated again",
    flags: { id: { arg: 'id', value: 'ID', help: 'the owner', required: true }, actor: actor('recorded as who did it') },
  },
  'owner activate': {
    summary: 'activate a deactivated owner again',
    flags: { id: { arg: 'id', value: 'ID', help: 'the owner', required: true }, actor: actor('recorded as who did it') },
  },
  'key issue': {
    summary: 'issue an API key and print it, once',
    flags: {
      owner: { arg: 'owner', value: 'ID', help: 'the owner the key belongs to (pro, enterprise or admin)', required: true },
      scopes: { arg: 'scopes', value: 'read[,write]', help: 'read: GET endpoints; write: POST /briefings', list: true, required: true },
      actor: actor('an enterprise or admin owner for itself, or an active admin for a pro or enterprise owner'),
      label: { arg: 'label', value: 'TEXT', help: 'a note shown by key list' },
    },
    notes: 'The key is printed only this once: store it. Only its SHA-256 is kept.',
  },
  'key revoke': {
    summary: 'revoke a key: requests with it answer 401 invalid_key within a second',
    flags: {
      'key-id': { arg: 'key_id', value: 'KEY_ID', help: 'the key id (key_…), from key issue or key list', required: true },
      actor: actor("the key's owner or an active admin"),
      reason: { arg: 'reason', value: 'TEXT', help: 'recorded with the revocation' },
    },
  },
  'key list': {
    summary: "list an owner's keys (hints, scopes, status; never the keys themselves)",
    flags: { owner: { arg: 'owner', value: 'ID', help: 'the owner', required: true } },
  },
  'audit key': {
    summary: 'every event of a key, in order, with time, actor and the resulting state: was it valid then',
    flags: { until: { arg: 'until', value: 'ISO-TIME', help: 'the state as of this time (events after it are left out)' } },
    positional: { arg: 'key_id', value: 'KEY_ID', help: 'the key id (key_…)', required: true },
  },
  'audit owner': {
    summary: "every event of an owner and of its keys, in order, with the resulting tier, status and active keys",
    flags: { until: { arg: 'until', value: 'ISO-TIME', help: 'the state as of this time (events after it are left out)' } },
    positional: { arg: 'id', value: 'ID', help: 'the owner', required: true },
  },
  'audit quota': {
    summary: 'every briefing charge, free cache hit and Idempotency-Key replay of an owner in a month, with the running total',
    flags: {
      month: { arg: 'month', value: 'YYYY-MM', help: 'the UTC month (default: the month of --until, else this month)' },
      until: { arg: 'until', value: 'ISO-TIME', help: 'only entries at or before this time' },
    },
    positional: { arg: 'id', value: 'ID', help: 'the owner', required: true },
  },
  'projections status': {
    summary: 'every generation of every projection: state, position, head, lag in events and seconds, last error',
    flags: {},
    notes: `Names: ${PROJECTION_NAMES}.`,
  },
  'projections rebuild': {
    summary: 'build a new generation from the events beside the live one; it goes live when caught up (all when no name is given)',
    flags: { hold: { arg: 'hold', value: '', help: 'build but do not promote: inspect with projections diff, then projections promote', boolean: true } },
    positional: { arg: 'names', value: 'NAME', help: `projections to rebuild: ${PROJECTION_NAMES}`, rest: true },
  },
  'projections diff': {
    summary: 'compare the held generation with the live one, as the API would answer',
    flags: {},
    positional: { arg: 'name', value: 'NAME', help: PROJECTION_NAMES, required: true },
  },
  'projections promote': {
    summary: 'make the held (caught-up) generation live',
    flags: {},
    positional: { arg: 'name', value: 'NAME', help: PROJECTION_NAMES, required: true },
  },
  'projections rollback': {
    summary: 'switch back to the previous generation at once (again: forward)',
    flags: {},
    positional: { arg: 'name', value: 'NAME', help: PROJECTION_NAMES, required: true },
  },
  'projections prune': {
    summary: 'drop every generation but the live one and a build in progress',
    flags: {},
    positional: { arg: 'name', value: 'NAME', help: PROJECTION_NAMES, required: true },
  },
  ingest: {
    summary: 'ingest a listings feed (one JSON object a line; docs/feed-format.md)',
    flags: {},
    positional: { arg: 'file', value: 'FILE.ndjson', help: 'the feed, relative to where you run the command', required: true, path: true },
    notes: 'Bad lines are reported by number and skipped; the exit code is then 1. Re-running a file records nothing new.',
  },
  'demo seed': {
    summary: 'add the deterministic demo market (docs/demo-market.md)',
    flags: {
      listings: { arg: 'listings', value: 'N', help: 'number of listings (default 2000, at least 112)', integer: true },
      seed: { arg: 'seed', value: 'S', help: 'random seed (default mirador)' },
      anchor: { arg: 'anchor', value: 'YYYY-MM-DD', help: 'last day of the 180-day history (default: today, UTC)' },
    },
  },
  'events export': {
    summary: 'write the whole event log as NDJSON (docs/events-file.md): a backup, or a move to another store',
    flags: { out: { arg: 'out', value: 'FILE', help: 'where to write it, relative to where you run the command (default: stdout)', path: true } },
    notes: 'The file is written as FILE.partial and renamed when complete.',
  },
  'events import': {
    summary: 'record the events of an export into this store (empty, or holding the beginning of the same log)',
    flags: {},
    positional: { arg: 'file', value: 'FILE', help: 'an events export, relative to where you run the command', required: true, path: true },
    notes: 'Re-running an import records nothing new. A store holding other events is refused.',
  },
}

const GLOBAL_OPTIONS = `options for every command:
  --json        machine-readable JSON on stdout (errors as JSON on stderr)
  --init        create an empty embedded store in DATA_DIR if there is none (never done implicitly)
  --help, -h    this help, or a command's: npm run cli -- key issue --help`

const FOOTER = `With DATABASE_URL the CLI works on PostgreSQL. Otherwise it goes through the running server's
socket (DATA_DIR/mirador.sock) or, with no server running, opens the embedded store in DATA_DIR
itself (default ./data, relative to the repository root). It names the store on stderr.
Exit codes: 0 done, 1 refused (reason on stderr), 2 bad usage.`

/** `--tier free|pro`, `[--label TEXT]`, `[--hold]`. */
function optionText(name: string, flag: Flag): string {
  const text = flag.boolean ? `--${name}` : `--${name} ${flag.value}`
  return flag.required ? text : `[${text}]`
}

function synopsis(command: string, spec: Spec): string {
  const flags = Object.entries(spec.flags).map(([name, f]) => optionText(name, f))
  const positional = spec.positional
    ? [spec.positional.rest ? `[${spec.positional.value}...]` : spec.positional.required ? spec.positional.value : `[${spec.positional.value}]`]
    : []
  return [command, ...positional, ...flags].join(' ')
}

/** Every command, one synopsis line and its summary each. */
export function usage(): string {
  const lines = Object.entries(SPECS).map(([command, spec]) => `  ${synopsis(command, spec)}\n      ${spec.summary}`)
  return `usage: npm run cli -- <command> [options]\n\n${lines.join('\n')}\n\n${GLOBAL_OPTIONS}\n\n${FOOTER}`
}

/** One command's help: synopsis, summary, each argument, notes. */
export function commandHelp(command: string): string {
  const spec = SPECS[command]!
  const rows = [
    ...(spec.positional ? [[spec.positional.value, spec.positional.help]] : []),
    ...Object.entries(spec.flags).map(([name, f]) => [optionText(name, f), f.help]),
  ]
  const width = Math.max(0, ...rows.map(([left]) => left!.length))
  const table = rows.map(([left, right]) => `  ${left!.padEnd(width)}  ${right}`).join('\n')
  return [`usage: npm run cli -- ${synopsis(command, spec)}`, '', spec.summary, ...(table ? ['', table] : []), ...(spec.notes ? ['', spec.notes] : []), '', GLOBAL_OPTIONS].join('\n')
}

/** The commands of a group (`key` → key issue, key revoke, key list). */
function groupHelp(group: string): string | undefined {
  const commands = Object.entries(SPECS).filter(([command]) => command.split(' ')[0] === group)
  if (commands.length === 0) return undefined
  return `usage: npm run cli -- ${group} <command> [options]\n\n${commands
    .map(([command, spec]) => `  ${synopsis(command, spec)}\n      ${spec.summary}`)
    .join('\n')}\n\nnpm run cli -- ${group} <command> --help shows a command's options.`
}

const usageError = (message: string) => new AppError('invalid_request', `${message}\n\n${usage()}`)

/** The command named by the first one or two words (`ingest`, `key issue`), if any. */
function commandOf(words: readonly string[]): string | undefined {
  if (words[0] !== undefined && SPECS[words[0]]) return words[0]
  const two = `${words[0] ?? ''} ${words[1] ?? ''}`
  return SPECS[two] ? two : undefined
}

function helpFor(words: readonly string[]): CliRequest {
  if (words.length === 0) return { kind: 'help', text: usage() }
  const command = commandOf(words)
  if (command) return { kind: 'help', text: commandHelp(command) }
  const group = groupHelp(words[0]!)
  if (group) return { kind: 'help', text: group }
  throw usageError(`unknown command "${words.slice(0, 2).join(' ')}"`)
}

/**
 * Pure: argv (after `cli`) → the operator command and its arguments, or help, or a usage error.
 * `cwd` is where the user ran the command: relative file arguments are resolved from it.
 */
export function parseCli(argv: readonly string[], cwd: string): CliRequest {
  const json = argv.includes('--json')
  const init = argv.includes('--init')
  const help = argv.some((a) => a === '--help' || a === '-h') || argv[0] === 'help'
  const words = argv.filter((a, i) => a !== '--json' && a !== '--init' && a !== '--help' && a !== '-h' && !(i === 0 && a === 'help'))
  if (help) return helpFor(words.filter((w) => !w.startsWith('--')))

  const command = commandOf(words)
  if (!command) throw usageError(words.length > 0 ? `unknown command "${words.slice(0, 2).join(' ')}"` : 'no command given')
  const spec = SPECS[command]!
  const asPath = (value: string) => (isAbsolute(value) ? value : resolve(cwd, value))
  const args: Record<string, unknown> = {}
  const positionals: string[] = []
  for (let i = command.split(' ').length; i < words.length; i++) {
    const word = words[i]!
    if (!word.startsWith('--')) {
      positionals.push(word)
      continue
    }
    const eq = word.indexOf('=')
    const name = word.slice(2, eq < 0 ? undefined : eq)
    const flag = spec.flags[name]
    if (!flag) throw usageError(`"${command}" has no option --${name}`)
    if (flag.boolean) {
      if (eq >= 0) throw usageError(`--${name} takes no value`)
      args[flag.arg] = true
      continue
    }
    const value = eq < 0 ? words[++i] : word.slice(eq + 1)
    if (value === undefined || (eq < 0 && value.startsWith('--'))) throw usageError(`--${name} needs a value`)
    args[flag.arg] = flag.list
      ? value.split(',').map((s) => s.trim()).filter(Boolean)
      : flag.integer && /^[0-9]+$/.test(value)
        ? Number(value)
        : flag.path
          ? asPath(value)
          : value
  }
  const positional = spec.positional
  if (positional) {
    const values = positional.path ? positionals.map(asPath) : positionals
    if (positional.rest) args[positional.arg] = values
    else if (values[0] !== undefined) args[positional.arg] = values[0]
    if (!positional.rest && values.length > 1) throw usageError(`"${command}" takes one ${positional.value}`)
  } else if (positionals.length > 0) {
    throw usageError(`unexpected argument "${positionals[0]}"`)
  }
  const missing = [
    ...Object.entries(spec.flags).filter(([, f]) => f.required && args[f.arg] === undefined).map(([n]) => `--${n}`),
    ...(positional?.required && args[positional.arg] === undefined ? [positional.value] : []),
  ]
  if (missing.length > 0) throw usageError(`"${command}" needs ${missing.join(', ')}`)
  return { kind: 'run', command, args, json, init }
}

/** Every command the table holds (for tests that walk them all). */
export const cliCommands = (): string[] => Object.keys(SPECS)
