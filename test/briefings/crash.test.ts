import { describe, expect, test } from 'vitest'
import { quotaAudit } from '../../src/audit/quota.ts'
import type { BriefingService } from '../../src/briefings/service.ts'
import type { Briefed } from '../../src/briefings/deps.ts'
import { cacheHitStream, quotaStream } from '../../src/domain/briefings/events.ts'
import { DEFAULT_LEASE_MS, idempotencyStream } from '../../src/domain/briefings/idempotency.ts'
import { type BriefingWriter, localAnalyst } from '../../src/domain/briefings/writer.ts'
import { type EventStore, EventStoreUnavailable, type NewEvent } from '../../src/eventstore/port.ts'
import { AppError } from '../../src/shared/errors.ts'
import { cryptoRandom } from '../../src/shared/random.ts'
import { databaseTargets } from '../support/databases.ts'
import { fixtureFacts, gtZones } from './fixtures.ts'
import { briefingServiceOn, briefingStoreFor, caller } from './harness.ts'

/**
 * A briefing under an Idempotency-Key is three appends to three streams: the claim of the key, the
 * charge (or the free cache hit), the completion of the key. Whatever fails or dies between them,
 * the next request with the key gets the briefing, and the owner pays for it once.
 */

const facts = fixtureFacts(gtZones(40))
const T0 = new Date('2026-05-20T10:00:00Z')
/** Past the lease of a claim made at T0: when a later process may take the key over. */
const AFTER_LEASE = new Date(T0.getTime() + DEFAULT_LEASE_MS + 1000)
const body = (zone: number) => ({ zone: `Zona ${zone}`, profile: 'balanced' })

type Appended = { stream: string; events: readonly NewEvent[] }

/** The store, failing the first append that `fails` picks, once, before anything of it is recorded. */
function failingOnce(store: EventStore, fails: (append: Appended) => boolean): EventStore {
  let armed = true
  return {
    ...store,
    async append(stream, events, expected) {
      if (armed && fails({ stream, events })) {
        armed = false
        throw new EventStoreUnavailable('injected failure')
      }
      return store.append(stream, events, expected)
    },
  }
}

/**
 * The store of a process that dies at its `n`-th append, `before` it is recorded or right `after`:
 * from then on every call fails, as in a process killed with SIGKILL.
 */
function dyingAt(store: EventStore, n: number, when: 'before' | 'after'): EventStore & { appends: Appended[] } {
  let dead = false
  const appends: Appended[] = []
  const alive = () => {
    if (dead) throw new Error('the process is dead')
  }
  return {
    ...store,
    appends,
    async append(stream, events, expected) {
      alive()
      appends.push({ stream, events })
      if (appends.length === n) {
        dead = true
        if (when === 'after') await store.append(stream, events, expected)
        throw new Error('killed')
      }
      return store.append(stream, events, expected)
    },
    async readStream(stream) {
      alive()
      return store.readStream(stream)
    },
    async readStreams(streams) {
      alive()
      return store.readStreams(streams)
    },
  }
}

/** The local analyst, counting its calls; `hold` makes the next call wait until released. */
function gatedWriter(): BriefingWriter & { calls: number; hold(): { reached: Promise<void>; release(): void } } {
  let gate: { reached(): void; opened: Promise<void> } | null = null
  const writer = {
    calls: 0,
    async write(...args: Parameters<BriefingWriter['write']>) {
      writer.calls += 1
      const held = gate
      gate = null
      if (held) {
        held.reached()
        await held.opened
      }
      return localAnalyst.write(...args)
    },
    hold() {
      let reached!: () => void
      let release!: () => void
      const opened = new Promise<void>((resolve) => (release = resolve))
      const reachedPromise = new Promise<void>((resolve) => (reached = resolve))
      gate = { reached, opened }
      return { reached: reachedPromise, release }
    },
  }
  return writer
}

for (const target of databaseTargets('briefings interrupted between appends')) {
  describe(`a briefing under an Idempotency-Key interrupted between its appends (${target.name})`, () => {
    const env = briefingStoreFor(target.open)
    const serviceOn = (on: EventStore, now: Date, writer: BriefingWriter = localAnalyst): BriefingService =>
      briefingServiceOn(env.db, on, { facts, writer, clock: () => now, random: cryptoRandom })
    const charges = async (owner: string) => (await env.store.readStream(quotaStream(owner, '2026-05'))).map((e) => e.data.briefing_id)
    const keyHistory = async (owner: string, key: string) => (await env.store.readStream(idempotencyStream(owner, key))).map((e) => e.type)

    test('the completion fails after the charge: the request fails; its retry gets that briefing, charged once', async () => {
      const who = caller('ann')
      const failing = failingOnce(env.store, ({ events }) => events[0]?.type === 'IdempotencyKeyCompleted')
      const first = await serviceOn(failing, T0)
        .brief('investor', body(1), who, 'order-1')
        .then(
          () => null,
          (error: unknown) => error,
        )
      expect(first).toBeInstanceOf(AppError)
      expect((first as AppError).code).toBe('service_unavailable')
      const [charged] = await charges('ann')
      expect(charged).toBeDefined()

      const retry = await serviceOn(env.store, new Date(T0.getTime() + 2000)).brief('investor', body(1), who, 'order-1')
      expect(retry).toMatchObject({ replayed: false, briefing: { briefing_id: charged, cached: false, usage: { used: 1, quota: 50 } } })
      expect(await charges('ann')).toEqual([charged])
      expect(await keyHistory('ann', 'order-1')).toEqual(['IdempotencyKeyClaimed', 'IdempotencyKeyReleased', 'IdempotencyKeyClaimed', 'IdempotencyKeyCompleted'])
      // And from then on it is the key's result: replayed, free.
      expect(await serviceOn(env.store, new Date(T0.getTime() + 3000)).brief('investor', body(1), who, 'order-1')).toEqual({ replayed: true, briefing: retry.briefing })
      expect((await quotaAudit(env.store, 'ann', '2026-05')).map((e) => [e.type, e.used])).toEqual([
        ['BriefingGenerated', 1],
        ['BriefingReplayed', 1],
      ])
    })

    // Appends of a generated briefing: 1 claim, 2 charge, 3 completion; of a cache hit: 1 claim, 2 hit, 3 completion.
    for (const path of ['generated', 'cache hit'] as const) {
      for (const n of [1, 2, 3]) {
        for (const when of ['before', 'after'] as const) {
          test(`${path}: the process dies ${when} append ${n}; a later process retries the key after the lease: one charge at most, and the briefing recorded`, async () => {
            const owner = `crash-${path === 'generated' ? 'g' : 'h'}${n}${when[0]}`
            const who = caller(owner)
            const zone = path === 'generated' ? 10 + n * 2 + (when === 'after' ? 1 : 0) : 30
            if (path === 'cache hit') {
              await serviceOn(env.store, T0).brief('investor', body(zone), caller('warm-cache'))
              // The cache is a read model: the briefing is a hit only once its projection has applied it.
              await env.projections.runner.catchUp()
            }
            const dying = dyingAt(env.store, n, when)
            await expect(serviceOn(dying, T0).brief('investor', body(zone), who, 'k')).rejects.toThrow()

            const retried: Briefed = await serviceOn(env.store, AFTER_LEASE).brief('investor', body(zone), who, 'k')

            const charged = await charges(owner)
            const hits = (await env.store.readStream(cacheHitStream(owner, '2026-05'))).map((e) => e.data.briefing_id)
            if (path === 'generated') {
              expect(charged).toEqual([retried.briefing.briefing_id])
              expect(retried.briefing).toMatchObject({ cached: false, usage: { used: 1 } })
            } else {
              expect(charged).toEqual([])
              expect(hits).toEqual([retried.briefing.briefing_id])
              expect(retried.briefing).toMatchObject({ cached: true, usage: { used: 0 } })
            }
            // Died after the completion: the retry is the replay of it; else the retry completed the key.
            expect(retried.replayed).toBe(n === 3 && when === 'after')
            expect((await keyHistory(owner, 'k')).filter((type) => type === 'IdempotencyKeyCompleted')).toHaveLength(1)
          })
        }
      }
    }

    test('a claimant that outlives its lease and charges late: the request that took the key over charged first; one charge, one briefing for both', async () => {
      const who = caller('cid')
      const late = gatedWriter()
      const held = late.hold()
      const slow = serviceOn(env.store, T0, late).brief('investor', body(35), who, 'k-cid')
      await held.reached

      const takeover = await serviceOn(env.store, AFTER_LEASE).brief('investor', body(35), who, 'k-cid')
      expect(takeover).toMatchObject({ replayed: false, briefing: { cached: false, usage: { used: 1 } } })
      held.release()
      // Its charge is the attempt's, recorded already: nothing is written; it cannot complete the key, and replays its result.
      expect(await slow).toEqual({ replayed: true, briefing: takeover.briefing })
      expect(await charges('cid')).toEqual([takeover.briefing.briefing_id])
    })

    test('a claimant that outlives its lease and charges before the request taking over looks: that one completes the key from this charge', async () => {
      const who = caller('dot')
      const slowStore = failingOnce(env.store, ({ events }) => events[0]?.type === 'IdempotencyKeyCompleted')
      // The first run charges, then fails to complete (and releases the key, its charge possibly recorded).
      await expect(serviceOn(slowStore, T0).brief('investor', body(36), who, 'k-dot')).rejects.toThrow()
      const [charged] = await charges('dot')
      // Another body with the key meanwhile: refused, the key's attempt may hold a charge for the first.
      await expect(serviceOn(env.store, T0).brief('investor', body(37), who, 'k-dot')).rejects.toMatchObject({ code: 'idempotency_conflict' })
      const retry = await serviceOn(env.store, T0).brief('investor', body(36), who, 'k-dot')
      expect(retry.briefing.briefing_id).toBe(charged)
      expect(await charges('dot')).toEqual([charged])
    })
  })
}
