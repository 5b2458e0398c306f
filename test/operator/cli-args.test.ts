import { describe, expect, test } from 'vitest'
import { SCOPE_ALLOWS, SCOPES } from '../../src/domain/keys/key.ts'
import { TIERS } from '../../src/domain/owners/owner.ts'
import { commandLine, UsageError } from '../../src/operator/cli-args.ts'
import { operatorCommands } from '../../src/operator/commands.ts'
import { allProjections } from '../../src/storage.ts'

const CWD = '/home/ana/feeds'
const PROJECTIONS = allProjections.map((p) => p.name)
const cli = commandLine(operatorCommands, { projections: PROJECTIONS, invocation: 'npm run -s cli --' })
const parse = (...argv: string[]) => cli.parse(argv, CWD)
/** The commands on the command line (the others are sent by the CLI's own flows). */
const onCli = operatorCommands.filter((c) => c.cli)
const cliCommands = () => onCli.map((c) => c.name)
const helpText = (...argv: string[]) => {
  const request = parse(...argv)
  if (request.kind !== 'help') throw new Error(`not help: ${JSON.stringify(request)}`)
  return request.text
}

describe('operator command line', () => {
  test('maps flags to command arguments, lists split on commas', () => {
    expect(parse('key', 'issue', '--owner', 'acme', '--scopes', 'read,write', '--actor', 'acme', '--json')).toEqual({
      kind: 'run',
      command: 'key issue',
      args: { owner: 'acme', scopes: ['read', 'write'], actor: 'acme' },
      json: true,
      init: false,
    })
    expect(parse('key', 'revoke', '--key-id=key_abcdefghijkl', '--actor', 'root')).toMatchObject({
      args: { key_id: 'key_abcdefghijkl', actor: 'root' },
      json: false,
    })
    expect(parse('--init', 'owner', 'create', '--id', 'acme-corp', '--tier', 'pro')).toMatchObject({ command: 'owner create', init: true })
  })

  test('positional arguments for audit and rebuild', () => {
    expect(parse('audit', 'owner', 'acme')).toMatchObject({ args: { id: 'acme' } })
    expect(parse('projections', 'rebuild')).toMatchObject({ args: { names: [] } })
    expect(parse('projections', 'rebuild', 'owners', 'api_keys')).toMatchObject({ args: { names: ['owners', 'api_keys'] } })
  })

  test('file arguments are resolved from where the command was run, not from the repository root', () => {
    expect(parse('ingest', 'f.ndjson')).toMatchObject({ args: { file: '/home/ana/feeds/f.ndjson' } })
    expect(parse('ingest', '../other/f.ndjson')).toMatchObject({ args: { file: '/home/ana/other/f.ndjson' } })
    expect(parse('ingest', '/srv/f.ndjson')).toMatchObject({ args: { file: '/srv/f.ndjson' } })
  })

  test('projections take the names status prints; --hold is a switch; audits take --until', () => {
    expect(parse('projections', 'rebuild', 'listings', '--hold')).toMatchObject({ args: { names: ['listings'], hold: true } })
    for (const command of ['diff', 'promote', 'rollback', 'prune']) {
      expect(parse('projections', command, 'listings', '--json')).toEqual({
        kind: 'run',
        command: `projections ${command}`,
        args: { name: 'listings' },
        json: true,
        init: false,
      })
    }
    expect(parse('audit', 'key', 'key_abcdefghijkl', '--until', '2026-05-01T10:00:00Z', '--json')).toMatchObject({
      command: 'audit key',
      args: { key_id: 'key_abcdefghijkl', until: '2026-05-01T10:00:00Z' },
      json: true,
    })
    expect(parse('audit', 'owner', 'acme', '--until=2026-05-01')).toMatchObject({ args: { id: 'acme', until: '2026-05-01' } })
  })

  /** The usage error `argv` is refused with. */
  const refusal = (argv: string[]): UsageError => {
    try {
      parse(...argv)
    } catch (error) {
      if (error instanceof UsageError) return error
      throw error
    }
    throw new Error(`not refused: ${JSON.stringify(argv)}`)
  }

  test.each([
    [[], /no command/, ['--help']],
    [['owner', 'explode'], /unknown command "owner explode"/, ['owner', '--help']],
    [['owner', 'create', '--id', 'acme'], /needs --tier/, ['owner', 'create', '--help']],
    [['owner', 'create', '--id', 'acme', '--tier'], /--tier needs a value/, ['owner', 'create', '--help']],
    [['owner', 'create', '--id', 'acme', '--tier', 'pro', '--colour', 'red'], /no option --colour/, ['owner', 'create', '--help']],
    [['audit', 'key'], /needs KEY_ID/, ['audit', 'key', '--help']],
    [['key', 'list', '--owner', 'acme', 'extra'], /unexpected argument "extra"/, ['key', 'list', '--help']],
    [['teleport', '--help'], /unknown command "teleport"/, ['--help']],
    [['projections', 'promote'], /needs NAME/, ['projections', 'promote', '--help']],
    [['projections', 'rebuild', '--hold=yes'], /--hold takes no value/, ['projections', 'rebuild', '--help']],
  ])('%j is refused with a usage message and the help of the command it names, whole', (argv, message, help) => {
    const error = refusal(argv)
    expect(error.message).toMatch(message)
    expect(error.message).not.toContain('usage:')
    expect(error.help).toBe(helpText(...help))
  })

  test('values are checked before anything runs, and bad ones are named by their flag in words, never as a pattern', () => {
    expect(refusal(['owner', 'create', '--id', 'X', '--tier', 'pro']).message).toBe(
      '"owner create": --id: Expected an owner id: 2–63 characters, lower-case letters, digits, \'_\', \'.\', \'-\', starting with a letter or digit (e.g. acme-corp)',
    )
    expect(refusal(['owner', 'create', '--id', 'acme', '--tier', 'gold']).message).toBe('"owner create": --tier: Expected one of: free, pro, enterprise, admin')
    expect(refusal(['audit', 'key', 'key_short']).message).toBe('"audit key": KEY_ID: Expected a key id: key_ and 12 letters or digits, as key list shows it')
    expect(refusal(['demo', 'seed', '--listings', 'many']).message).toMatch(/^"demo seed": --listings: Expected an integer from \d+ to 1000000$/)
    for (const argv of [['owner', 'create', '--id', 'X', '--tier', 'pro'], ['key', 'revoke', '--key-id', 'k', '--actor', 'root']]) {
      expect(refusal(argv).message).not.toMatch(/\^|\$|\[a-z/)
    }
  })
})

describe('--help, generated from the list of commands', () => {
  test('--help, -h and help list every command of the list with its summary, and the global options', () => {
    const text = helpText('--help')
    expect(helpText('-h')).toBe(text)
    expect(helpText('help')).toBe(text)
    for (const command of cliCommands()) expect(text).toContain(`\n  ${command}`)
    expect(text).toContain('owner create --id ID --tier free|pro|enterprise|admin [--actor ID]\n      register an owner')
    expect(text).toMatch(/--init +create an empty embedded store/)
    expect(text).toMatch(/Exit codes: 0 done, 1 refused/)
  })

  test.each(cliCommands())('"%s --help" shows its synopsis and every option it accepts', (command) => {
    const text = helpText(...command.split(' '), '--help')
    expect(text.startsWith(`usage: npm run -s cli -- ${command}`)).toBe(true)
    expect(helpText('help', ...command.split(' '))).toBe(text)
    // Every option named in the help is accepted by the parser, and required ones are marked so.
    for (const [, option] of text.matchAll(/^ {2}\[?--([a-z-]+) /gm)) {
      expect(() => parse(...command.split(' '), `--${option}`)).not.toThrow(/has no option/)
    }
  })

  test('a command\'s help explains each option; a group\'s help lists its commands', () => {
    expect(helpText('key', 'issue', '--help')).toBe(
      [
        'usage: npm run -s cli -- key issue --owner ID --scopes read[,write] --actor ID [--label TEXT]',
        '',
        'issue an API key and print it, once',
        '',
        '  --owner ID             the owner the key belongs to (pro, enterprise or admin)',
        '  --scopes read[,write]  read: GET endpoints; write: POST /briefings',
        '  --actor ID             an enterprise or admin owner for itself, or an active admin for a pro or enterprise owner',
        '  [--label TEXT]         a note shown by key list',
        '',
        'The key is printed only this once: store it. Only its SHA-256 is kept.',
        '',
        'options for every command:',
        '  --json        machine-readable JSON on stdout (errors as JSON on stderr)',
        '  --init        create an empty embedded store in DATA_DIR if there is none (never done implicitly)',
        "  --help, -h    this help, or a command's: npm run -s cli -- key issue --help",
      ].join('\n'),
    )
    // --help wins over missing or extra arguments.
    expect(helpText('key', 'issue', '--owner', 'acme', '--help')).toBe(helpText('key', 'issue', '--help'))
    const group = helpText('key', '--help')
    expect(group).toMatch(/key issue[\s\S]*key revoke[\s\S]*key list/)
    expect(group).not.toContain('owner create')
  })
})

describe('each command declares what people see, once', () => {
  const terms = { projections: PROJECTIONS, invocation: 'npm run -s cli --' }
  const said = (text: string | ((t: typeof terms) => string)) => (typeof text === 'string' ? text : text(terms))

  test.each(cliCommands())('"%s" has a summary, an output, and every parameter explained in its help and listed in --help', (name) => {
    const face = onCli.find((c) => c.name === name)!.cli!
    expect(face.summary).toMatch(/^[a-z].{10,}/)
    expect(face.output).toBeTypeOf('function')
    const own = helpText(...name.split(' '), '--help').split('\n')
    const listed = helpText('--help').split('\n').find((line) => line === `  ${name}` || line.startsWith(`  ${name} `))
    expect(listed).toBeDefined()
    for (const [arg, param] of Object.entries(face.params)) {
      const shown = param.positional ? param.placeholder! : `--${arg.replaceAll('_', '-')}`
      expect(listed).toContain(shown)
      const row = own.find((line) => line.startsWith(`  ${shown}`) || line.startsWith(`  [${shown}`))
      expect(row, `${name}: ${shown}`).toBeDefined()
      expect(row!.endsWith(`  ${said(param.help)}`)).toBe(true)
    }
  })

  test('the commands the CLI sends for its own flows are not on the command line', () => {
    const internal = operatorCommands.filter((c) => !c.cli).map((c) => c.name)
    expect(internal).toEqual(['ingest lines', 'events read', 'events import lines'])
    for (const name of internal) expect(helpText('--help')).not.toContain(`  ${name}`)
  })

  test('the help names exactly the tiers, scopes and read models of their definitions', () => {
    expect(helpText('owner', 'create', '--help').match(/--tier (\S+)/)![1]!.split('|')).toEqual([...TIERS])
    expect(helpText('owner', 'set-tier', '--help').match(/--tier (\S+)/)![1]!.split('|')).toEqual([...TIERS])
    const issue = helpText('key', 'issue', '--help')
    expect(issue.match(/--scopes (\S+)/)![1]!.match(/[a-z]+/g)).toEqual([...SCOPES])
    expect(issue).toMatch(new RegExp(`^  --scopes \\S+ +${SCOPES.map((s) => `${s}: ${SCOPE_ALLOWS[s]}`).join('; ')}$`, 'm'))
    const names = PROJECTIONS.join(', ')
    expect(helpText('projections', 'status', '--help')).toContain(`\nNames: ${names}.\n`)
    expect(helpText('projections', 'rebuild', '--help')).toMatch(new RegExp(`^  NAME +projections to rebuild: ${names}$`, 'm'))
    for (const command of ['diff', 'promote', 'rollback', 'prune']) {
      expect(helpText('projections', command, '--help')).toMatch(new RegExp(`^  NAME +${names}$`, 'm'))
    }
  })
})
