import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { quotaAudit } from '../../src/audit/quota.ts'
import { cacheHitStream, quotaStream } from '../../src/domain/briefings/events.ts'
import { idempotencyStream, legacyReplayStream } from '../../src/domain/briefings/idempotency.ts'
import { localAnalyst } from '../../src/domain/briefings/writer.ts'
import { openPglite } from '../../src/db/pglite.ts'
import { categoryOf } from '../../src/eventstore/port.ts'
import { OWNER_ID_PATTERN } from '../../src/domain/owners/owner.ts'
import { cryptoRandom } from '../../src/shared/random.ts'
import { fixtureFacts, gtZones } from './fixtures.ts'
import { briefingServiceOn, briefingStoreFor, caller } from './harness.ts'

const ownerId = fc.stringMatching(new RegExp(OWNER_ID_PATTERN))
const month = fc.tuple(fc.integer({ min: 2000, max: 2099 }), fc.integer({ min: 1, max: 12 })).map(([y, m]) => `${y}-${String(m).padStart(2, '0')}`)
const ownerMonth = fc.tuple(ownerId, month)

describe('owner-month stream names with hyphenated owner ids', () => {
  test.each([
    ['quota', quotaStream],
    ['cachehit', cacheHitStream],
    ['replay', legacyReplayStream],
  ])('%s-<owner>-<YYYY-MM>: the category is right and distinct (owner, month) pairs never share a stream', (category, streamOf) => {
    expect(streamOf('acme-corp', '2026-05')).toBe(`${category}-acme-corp-2026-05`)
    fc.assert(
      fc.property(ownerMonth, ownerMonth, ([o1, m1], [o2, m2]) => {
        expect(categoryOf(streamOf(o1, m1))).toBe(category)
        expect(streamOf(o1, m1) === streamOf(o2, m2)).toBe(o1 === o2 && m1 === m2)
      }),
      { numRuns: 2000 },
    )
  })

  test('idempotency-<owner>-<hash>: distinct (owner, key) pairs never share a stream', () => {
    fc.assert(
      fc.property(ownerId, ownerId, fc.string({ minLength: 1 }), fc.string({ minLength: 1 }), (o1, o2, k1, k2) => {
        expect(categoryOf(idempotencyStream(o1, k1))).toBe('idempotency')
        expect(idempotencyStream(o1, k1) === idempotencyStream(o2, k2)).toBe(o1 === o2 && k1 === k2)
      }),
      { numRuns: 2000 },
    )
  })
})

describe('owners "acme" and "acme-corp" side by side', () => {
  const env = briefingStoreFor(openPglite)

  test('each audit and usage sees only its own owner\'s briefings', async () => {
    const at = new Date('2026-05-20T10:00:00Z')
    const service = briefingServiceOn(env.db, env.store, { facts: fixtureFacts(gtZones(5)), writer: localAnalyst, clock: () => at, random: cryptoRandom })
    const brief = (owner: string, zone: number) => service.brief('investor', { zone: `Zona ${zone}`, profile: 'balanced' }, caller(owner))
    await brief('acme', 1)
    await brief('acme-corp', 2)
    await brief('acme-corp', 3)
    await brief('acme-corp', 1)
    expect((await quotaAudit(env.store, 'acme', '2026-05')).map((e) => e.type)).toEqual(['BriefingGenerated'])
    expect((await quotaAudit(env.store, 'acme-corp', '2026-05')).map((e) => e.type)).toEqual(['BriefingGenerated', 'BriefingGenerated', 'BriefingServedFromCache'])
    expect(await service.usage('acme', 'pro', at)).toMatchObject({ used: 1 })
    expect(await service.usage('acme-corp', 'pro', at)).toMatchObject({ used: 2 })
  })
})
