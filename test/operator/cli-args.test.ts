import { describe, expect, test } from 'vitest'
import { parseCli } from '../../src/operator/cli-args.ts'

describe('operator command line', () => {
  test('maps flags to command arguments, lists split on commas', () => {
    expect(parseCli(['key', 'issue', '--owner', 'acme', '--scopes', 'read,write', '--actor', 'acme', '--json'])).toEqual({
      command: 'key issue',
      args: { owner: 'acme', scopes: ['read', 'write'], actor: 'acme' },
      json: true,
    })
    expect(parseCli(['key', 'revoke', '--key-id=key_abcdefghijkl', '--actor', 'root'])).toMatchObject({
      args: { key_id: 'key_abcdefghijkl', actor: 'root' },
      json: false,
    })
  })

  test('positional arguments for audit and rebuild', () => {
    expect(parseCli(['audit', 'owner', 'acme']).args).toEqual({ id: 'acme' })
    expect(parseCli(['projections', 'rebuild']).args).toEqual({ names: [] })
    expect(parseCli(['projections', 'rebuild', 'owners', 'api_keys']).args).toEqual({ names: ['owners', 'api_keys'] })
  })

  test('projections take the names status prints; --hold is a switch; audits take --until', () => {
    expect(parseCli(['projections', 'rebuild', 'listings', '--hold']).args).toEqual({ names: ['listings'], hold: true })
    for (const command of ['diff', 'promote', 'rollback', 'prune']) {
      expect(parseCli(['projections', command, 'listings', '--json'])).toEqual({ command: `projections ${command}`, args: { name: 'listings' }, json: true })
    }
    expect(parseCli(['audit', 'key', 'key_abcdefghijkl', '--until', '2026-05-01T10:00:00Z', '--json'])).toEqual({
      command: 'audit key',
      args: { key_id: 'key_abcdefghijkl', until: '2026-05-01T10:00:00Z' },
      json: true,
    })
    expect(parseCli(['audit', 'owner', 'acme', '--until=2026-05-01']).args).toEqual({ id: 'acme', until: '2026-05-01' })
  })

  test.each([
    [[], /no command/],
    [['owner', 'explode'], /unknown command "owner explode"/],
    [['owner', 'create', '--id', 'acme'], /needs --tier/],
    [['owner', 'create', '--id', 'acme', '--tier'], /--tier needs a value/],
    [['owner', 'create', '--id', 'acme', '--tier', 'pro', '--colour', 'red'], /no option --colour/],
    [['audit', 'key'], /needs KEY_ID/],
    [['key', 'list', '--owner', 'acme', 'extra'], /unexpected argument "extra"/],
    [['projections', 'promote'], /needs NAME/],
    [['projections', 'rebuild', '--hold=yes'], /--hold takes no value/],
  ])('%j is refused with a usage message', (argv, message) => {
    expect(() => parseCli(argv)).toThrow(message)
    expect(() => parseCli(argv)).toThrow(/usage: npm run cli/)
  })
})
