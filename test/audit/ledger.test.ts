import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import type { QuotaAuditEntry } from '../../src/audit/quota.ts'
import { verifyLog } from '../../src/audit/verify.ts'
import type { TrailLine } from '../../src/audit/trail.ts'
import { seedDemo } from '../../src/demo/seed.ts'
import { MIN_DEMO_LISTINGS } from '../../src/domain/demo/market.ts'
import { operatorCommand } from '../../src/operator/commands.ts'
import { type TestSystem, startTestSystem } from '../support/app.ts'
import { databaseTargets } from '../support/databases.ts'
import { initialisedDataDir, runCli } from '../support/server.ts'

/** A clock the test moves a minute per step. */
const clock = Object.assign(() => new Date(clock.now), { now: 0 })
const tick = () => (clock.now += 60_000)

type QuotaTable = { owner_id: string; month: string; until: string | null; used: number; charged: number; cache_hits: number; replays: number; not_answered: number; entries: QuotaAuditEntry[] }

/** The fields of each table of docs/quota-ledger.md, in order: header, key, rotation, entry, closing line. */
const documentedFields = () =>
  readFileSync(resolve(import.meta.dirname, '../../docs/quota-ledger.md'), 'utf8')
    .split(/\n(?=[ ]*\| field \|)/)
    .slice(1)
    .map((table) => [...table.matchAll(/^\s*\| `([a-z_]+)` \|/gm)].map((m) => m[1]))

/** The command's text, as the CLI prints it (plus its final newline): the NDJSON file. */
const printed = (result: unknown) => `${operatorCommand('audit quota')!.cli!.output(result as never)}\n`

for (const target of databaseTargets('quota ledger')) {
  describe(`audit quota --format ndjson: an owner's ledger of a month (${target.name})`, () => {
    let system: TestSystem
    const keyIds: string[] = []

    beforeAll(async () => {
      clock.now = Date.parse('2026-05-10T09:00:00Z')
      system = await startTestSystem(await target.open(), { clock })
      await seedDemo(system.storage.store, { seed: 'ledger', listings: MIN_DEMO_LISTINGS, anchor: new Date('2026-05-01T00:00:00Z') })
      // An owner of another month and another owner: neither is in the ledger.
      const first = await system.ownerWithKey('acme-corp', 'enterprise')
      keyIds.push(first.keyId)
      const other = await system.ownerWithKey('other-co', 'pro')
      const post = async (key: string, body: Record<string, unknown>, idempotencyKey?: string) => {
        tick()
        const response = await system.request('/api/v1/briefings/investor', {
          key,
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}) },
          body: JSON.stringify(body),
        })
        expect(response.status).toBe(200)
      }
      await post(first.key, { zone: 'Zona 1', profile: 'balanced' }, 'order-1')
      await post(first.key, { zone: 'Zona 1', profile: 'balanced' }, 'order-1')
      // Another owner's briefing: acme-corp's same request is then a cache hit.
      await post(other.key, { zone: 'Zona 2', profile: 'balanced' })
      tick()
      const rolled = await system.run<{ key: string; key_id: string }>('key roll', { key_id: first.keyId, grace: '1h', actor: 'acme-corp' })
      keyIds.push(rolled.key_id)
      await system.settle()
      await post(rolled.key, { zone: 'Zona 2', profile: 'balanced' })
      await post(rolled.key, { zone: 'Zona 3', profile: 'balanced' })
      tick()
      await system.run('key revoke', { key_id: first.keyId, actor: 'acme-corp' })
      clock.now = Date.parse('2026-06-02T09:00:00Z')
      await post(rolled.key, { zone: 'Zona 4', profile: 'balanced' })
    })
    afterAll(() => system?.close())

    test('one JSON object a line: the header, the keys, the rotations, every entry as audit quota lists it, and the closing line with its totals', async () => {
      const head = await system.storage.store.headPosition()
      const table = await system.run<QuotaTable>('audit quota', { id: 'acme-corp', month: '2026-05' })
      const text = printed(await system.run('audit quota', { owner: 'acme-corp', month: '2026-05', format: 'ndjson' }))
      expect(text.endsWith('}\n')).toBe(true)
      const lines = text.slice(0, -1).split('\n').map((line) => JSON.parse(line) as Record<string, unknown>)

      expect(lines[0]).toEqual({ format: 'mirador-quota-ledger', version: 1, owner_id: 'acme-corp', month: '2026-05', until: null, exported_at: new Date(clock.now).toISOString() })

      const owner = await system.run<{ events: TrailLine<unknown>[] }>('audit owner', { id: 'acme-corp' })
      const issued = owner.events.filter((e) => e.type === 'ApiKeyIssued')
      const revoked = owner.events.find((e) => e.type === 'ApiKeyRevoked')!
      const rolledLine = owner.events.find((e) => e.type === 'ApiKeyRolled')!
      const keys = lines.filter((l) => l.record === 'key')
      expect(keys).toEqual([
        { record: 'key', position: issued[0]!.position, key_id: keyIds[0], issued_at: issued[0]!.at, scopes: ['read', 'write'], rolled_from: null, revoked_at: revoked.at },
        { record: 'key', position: issued[1]!.position, key_id: keyIds[1], issued_at: issued[1]!.at, scopes: ['read', 'write'], rolled_from: keyIds[0], revoked_at: null },
      ])
      expect(lines.filter((l) => l.record === 'rotation')).toEqual([
        {
          record: 'rotation',
          position: rolledLine.position,
          at: rolledLine.at,
          key_id: keyIds[0],
          successor_key_id: keyIds[1],
          grace_ends_at: rolledLine.details.grace_ends_at,
          by: 'acme-corp',
        },
      ])

      const entries = lines.filter((l) => l.record === 'entry')
      expect(entries.map(({ record, ...entry }) => entry)).toEqual(table.entries)
      expect(table.entries.map((e) => [e.type, e.key_id, e.answered])).toEqual([
        ['BriefingGenerated', keyIds[0], true],
        ['BriefingReplayed', keyIds[0], true],
        ['BriefingServedFromCache', keyIds[1], true],
        ['BriefingGenerated', keyIds[1], true],
      ])

      expect(lines.at(-1)).toEqual({
        end: true,
        keys: 2,
        rotations: 1,
        entries: 4,
        charged: table.charged,
        cache_hits: table.cache_hits,
        replays: table.replays,
        not_answered: table.not_answered,
        used: table.used,
        through_position: head,
        head_digest: (await verifyLog(system.storage.store)).head,
      })
      expect(table).toMatchObject({ charged: 2, cache_hits: 1, replays: 1, used: 2, not_answered: 0 })
      expect(lines).toHaveLength(1 + 2 + 1 + 4 + 1)
    })

    test('docs/quota-ledger.md defines every field of every kind of line, in the order they are printed', async () => {
      const text = printed(await system.run('audit quota', { owner: 'acme-corp', month: '2026-05', format: 'ndjson' }))
      const lines = text.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>)
      const fieldsOf = (line: Record<string, unknown> | undefined) => Object.keys(line!)
      expect(documentedFields()).toEqual([
        fieldsOf(lines[0]),
        fieldsOf(lines.find((l) => l.record === 'key')),
        fieldsOf(lines.find((l) => l.record === 'rotation')),
        fieldsOf(lines.find((l) => l.record === 'entry' && l.type === 'BriefingGenerated')),
        fieldsOf(lines.at(-1)),
      ])
    })

    test('--until stops the ledger at that moment; a month before the key existed has the header and the closing line only', async () => {
      const table = await system.run<QuotaTable>('audit quota', { id: 'acme-corp', month: '2026-05', until: '2026-05-10T09:02:30Z' })
      const ledger = printed(await system.run('audit quota', { owner: 'acme-corp', month: '2026-05', until: '2026-05-10T09:02:30Z', format: 'ndjson' }))
      const lines = ledger.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>)
      expect(lines.filter((l) => l.record === 'entry').map(({ record, ...entry }) => entry)).toEqual(table.entries)
      expect(lines.filter((l) => l.record === 'rotation')).toEqual([])
      expect(lines.at(-1)).toMatchObject({ keys: 1, rotations: 0, entries: 2, charged: 1, replays: 1, used: 1 })

      const earlier = printed(await system.run('audit quota', { owner: 'acme-corp', month: '2026-04', format: 'ndjson' }))
      const [header, end, ...rest] = earlier.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>)
      expect(rest).toEqual([])
      expect(header).toMatchObject({ format: 'mirador-quota-ledger', month: '2026-04' })
      expect(end).toMatchObject({ end: true, keys: 0, rotations: 0, entries: 0, charged: 0, used: 0 })
    })

    test('an owner that does not exist is refused (not_found)', async () => {
      await expect(system.run('audit quota', { owner: 'nobody-here', month: '2026-05', format: 'ndjson' })).rejects.toMatchObject({ code: 'not_found' })
    })

    // Last: it alters the log.
    test('a log altered before the ledger\'s position gets no ledger: conflict, naming the event at fault', async () => {
      await system.storage.db.query(`update mirador_events set data = jsonb_set(data, '{forged}', 'true') where global_position = 3`)
      await expect(system.run('audit quota', { owner: 'acme-corp', month: '2026-05', format: 'ndjson' })).rejects.toMatchObject({
        code: 'conflict',
        message: expect.stringContaining('position 3'),
      })
    })
  })
}

describe('audit quota on the command line', () => {
  const env = { npm_lifecycle_event: '', DATA_DIR: initialisedDataDir('mirador-ledger-') }
  beforeAll(async () => {
    expect((await runCli(['owner', 'create', '--id', 'acme-corp', '--tier', 'enterprise'], env)).code).toBe(0)
  }, 60_000)

  test('--format ndjson prints the ledger on stdout alone: a header and a closing line for an owner with nothing recorded', async () => {
    const ledger = await runCli(['audit', 'quota', '--owner', 'acme-corp', '--month', '2026-05', '--format', 'ndjson'], env)
    expect(ledger.code, ledger.stderr).toBe(0)
    const lines = ledger.stdout.split('\n')
    expect(lines.at(-1)).toBe('')
    expect(lines.slice(0, -1).map((line) => JSON.parse(line))).toEqual([
      { format: 'mirador-quota-ledger', version: 1, owner_id: 'acme-corp', month: '2026-05', until: null, exported_at: expect.any(String) },
      { end: true, keys: 0, rotations: 0, entries: 0, used: 0, charged: 0, cache_hits: 0, replays: 0, not_answered: 0, through_position: expect.any(Number), head_digest: expect.stringMatching(/^\d+:[0-9a-f]{16}$/) },
    ])
  }, 60_000)

  test('a bad --format, a bad month and no owner are usage errors (exit 2) that say what is expected', async () => {
    const format = await runCli(['audit', 'quota', '--owner', 'acme-corp', '--format', 'xml'], env)
    expect(format.code).toBe(2)
    expect(format.stderr.split('\n')[0]).toBe('"audit quota": --format: Expected table or ndjson')
    const month = await runCli(['audit', 'quota', '--owner', 'acme-corp', '--month', '2026-13', '--format', 'ndjson'], env)
    expect(month.code).toBe(2)
    expect(month.stderr.split('\n')[0]).toBe('"audit quota": --month: Expected a month: YYYY-MM, e.g. 2026-05')
    const owner = await runCli(['audit', 'quota', '--month', '2026-05', '--format', 'ndjson'], env)
    expect(owner.code).toBe(2)
    expect(owner.stdout).toBe('')
    expect(owner.stderr).toContain('error (invalid_request): "audit quota" needs the owner: audit quota OWNER, or --owner OWNER\n')
    const unknown = await runCli(['audit', 'quota', '--owner', 'nobody-here', '--format', 'ndjson'], env)
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toContain('error (not_found): owner nobody-here does not exist\n')
  }, 60_000)
})
