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

  test.each([
    [[], /no command/],
    [['owner', 'explode'], /unknown command "owner explode"/],
    [['owner', 'create', '--id', 'acme'], /needs --tier/],
    [['owner', 'create', '--id', 'acme', '--tier'], /--tier needs a value/],
    [['owner', 'create', '--id', 'acme', '--tier', 'pro', '--colour', 'red'], /no option --colour/],
    [['audit', 'key'], /needs KEY_ID/],
    [['key', 'list', '--owner', 'acme', 'extra'], /unexpected argument "extra"/],
  ])('%j is refused with a usage message', (argv, message) => {
    expect(() => parseCli(argv)).toThrow(message)
    expect(() => parseCli(argv)).toThrow(/usage: npm run cli/)
  })
})
