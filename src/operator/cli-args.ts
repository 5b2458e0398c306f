import { AppError } from '../shared/errors.ts'

/** A parsed command line: which operator command to run, with which arguments. */
export type CliRequest = { command: string; args: Record<string, unknown>; json: boolean }

export const USAGE = `usage: npm run cli -- <command> [--json]

  owner create --id ID --tier free|pro|enterprise|admin [--actor ID]
  owner set-tier --id ID --tier TIER --actor ID
  owner deactivate --id ID --actor ID
  owner activate --id ID --actor ID
  key issue --owner ID --scopes read[,write] --actor ID [--label TEXT]   (prints the key once)
  key revoke --key-id KEY_ID --actor ID [--reason TEXT]
  key list --owner ID
  audit key KEY_ID [--until ISO-TIME]            (every event with its resulting state; was it valid then)
  audit owner ID [--until ISO-TIME]              (the owner's and its keys' events; tier and status then)
  audit quota ID [--month YYYY-MM] [--until ISO-TIME]   (every briefing charge and free cache hit, running total)
  projections status                             (generations, position, lag, state, last error)
  projections rebuild [NAME...] [--hold]         (a new generation beside the live one; promoted when caught up)
  projections diff NAME                          (held vs live, as the API would answer)
  projections promote NAME | rollback NAME | prune NAME
      names: owners, api_keys, listings, briefing_cache, briefing_usage
  ingest FILE.ndjson                               (bad lines reported; exit 1 if any)
  demo seed [--listings N] [--seed S] [--anchor YYYY-MM-DD]

--json prints machine-readable JSON. Exit codes: 0 done, 1 refused, 2 bad usage.`

type Spec = {
  /** Flags this command takes: flag name → argument name (and whether it is a list). */
  flags: Record<string, { arg: string; list?: boolean; integer?: boolean; required?: boolean; boolean?: boolean }>
  /** Name of the argument given by the first positional word, if any. */
  positional?: { arg: string; rest?: boolean; required?: boolean }
}

const SPECS: Record<string, Spec> = {
  'owner create': { flags: { id: { arg: 'id', required: true }, tier: { arg: 'tier', required: true }, actor: { arg: 'actor' } } },
  'owner set-tier': {
    flags: { id: { arg: 'id', required: true }, tier: { arg: 'tier', required: true }, actor: { arg: 'actor', required: true } },
  },
  'owner deactivate': { flags: { id: { arg: 'id', required: true }, actor: { arg: 'actor', required: true } } },
  'owner activate': { flags: { id: { arg: 'id', required: true }, actor: { arg: 'actor', required: true } } },
  'key issue': {
    flags: {
      owner: { arg: 'owner', required: true },
      scopes: { arg: 'scopes', list: true, required: true },
      actor: { arg: 'actor', required: true },
      label: { arg: 'label' },
    },
  },
  'key revoke': {
    flags: { 'key-id': { arg: 'key_id', required: true }, actor: { arg: 'actor', required: true }, reason: { arg: 'reason' } },
  },
  'key list': { flags: { owner: { arg: 'owner', required: true } } },
  'audit key': { flags: { until: { arg: 'until' } }, positional: { arg: 'key_id', required: true } },
  'audit owner': { flags: { until: { arg: 'until' } }, positional: { arg: 'id', required: true } },
  'audit quota': { flags: { month: { arg: 'month' }, until: { arg: 'until' } }, positional: { arg: 'id', required: true } },
  ingest: { flags: {}, positional: { arg: 'file', required: true } },
  'demo seed': { flags: { listings: { arg: 'listings', integer: true }, seed: { arg: 'seed' }, anchor: { arg: 'anchor' } } },
  'projections status': { flags: {} },
  'projections rebuild': { flags: { hold: { arg: 'hold', boolean: true } }, positional: { arg: 'names', rest: true } },
  'projections diff': { flags: {}, positional: { arg: 'name', required: true } },
  'projections promote': { flags: {}, positional: { arg: 'name', required: true } },
  'projections rollback': { flags: {}, positional: { arg: 'name', required: true } },
  'projections prune': { flags: {}, positional: { arg: 'name', required: true } },
}

const usageError = (message: string) => new AppError('invalid_request', `${message}\n\n${USAGE}`)

/** Pure: argv (after `cli`) → the operator command and its arguments, or a usage error. */
export function parseCli(argv: readonly string[]): CliRequest {
  const json = argv.includes('--json')
  const words = argv.filter((a) => a !== '--json')
  // Commands are one word (`ingest`) or two (`key issue`).
  const command = SPECS[words[0] ?? ''] ? words[0]! : `${words[0] ?? ''} ${words[1] ?? ''}`.trim()
  const spec = SPECS[command]
  if (!spec) throw usageError(command ? `unknown command "${command}"` : 'no command given')
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
        : value
  }
  if (spec.positional) {
    if (spec.positional.rest) args[spec.positional.arg] = positionals
    else if (positionals[0] !== undefined) args[spec.positional.arg] = positionals[0]
    if (!spec.positional.rest && positionals.length > 1) throw usageError(`"${command}" takes one ${spec.positional.arg}`)
  } else if (positionals.length > 0) {
    throw usageError(`unexpected argument "${positionals[0]}"`)
  }
  const missing = [
    ...Object.entries(spec.flags).filter(([, f]) => f.required && args[f.arg] === undefined).map(([n]) => `--${n}`),
    ...(spec.positional?.required && args[spec.positional.arg] === undefined ? [spec.positional.arg.toUpperCase()] : []),
  ]
  if (missing.length > 0) throw usageError(`"${command}" needs ${missing.join(', ')}`)
  return { command, args, json }
}
