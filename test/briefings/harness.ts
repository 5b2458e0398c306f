import { afterAll, beforeAll, expect } from 'vitest'
import { ProjectionRunner } from '../../projections/engine/runner.ts'
import { briefingCacheProjection } from '../../projections/briefings/cache.ts'
import { BriefingReadModel } from '../../projections/briefings/read-model.ts'
import { briefingUsageProjection } from '../../projections/briefings/usage.ts'
import { type BriefingService, briefingService } from '../../src/briefings/service.ts'
import { type BriefingServiceDeps, type Caller } from '../../src/briefings/deps.ts'
import type { ZoneFactsSource } from '../../src/domain/briefings/facts.ts'
import { type BriefingWriter, localAnalyst } from '../../src/domain/briefings/writer.ts'
import type { Db } from '../../src/db/port.ts'
import type { EventStore } from '../../src/eventstore/port.ts'
import { AppError } from '../../src/shared/errors.ts'
import { cryptoRandom } from '../../src/shared/random.ts'
import { reopenPostgres } from '../support/databases.ts'
import { storeFor, type StoreEnv } from '../support/store.ts'
import { openSqlEventStore } from '../../src/eventstore/sql-event-store.ts'

/** The two briefing read models, as the server lists them among all (src/storage.ts). */
export const BRIEFING_PROJECTIONS = [briefingCacheProjection, briefingUsageProjection]

type Followed = { runner: ProjectionRunner; errors: unknown[]; stop(): Promise<void> }

/**
 * The briefing read models on `db`, kept current from `store` by a projection runner as the server's
 * runner keeps them (the service itself only reads them). `stop` before closing the store.
 */
export async function followBriefings(db: Db, store: EventStore): Promise<Followed> {
  const runner = new ProjectionRunner(db, store, BRIEFING_PROJECTIONS)
  const errors: unknown[] = []
  await runner.start((error) => errors.push(error))
  return { runner, errors, stop: () => runner.stop() }
}

/**
 * For the enclosing describe block: a database from `open`, its event store and the briefing read
 * models followed, ready in its tests and closed after them (the runner having met no error).
 */
export function briefingStoreFor(open: () => Promise<Db>): StoreEnv & { projections: Followed } {
  const env = storeFor(open) as StoreEnv & { projections: Followed }
  beforeAll(async () => {
    env.projections = await followBriefings(env.db, env.store)
  })
  // Runs before storeFor's closing (after-hooks run in reverse order).
  afterAll(async () => {
    await env.projections.stop()
    expect(env.projections.errors).toEqual([])
  })
  return env
}

/** A briefing service on `db` and `store` (whose read models something keeps current, see followBriefings). */
export const briefingServiceOn = (db: Db, store: EventStore, deps: Omit<BriefingServiceDeps, 'store' | 'readModel'>): BriefingService =>
  briefingService({ store, readModel: new BriefingReadModel(db), ...deps })

/** A clock the test moves by setting `now`. */
export type Clock = { now: Date; (): Date }
export const testClock = (iso: string): Clock => {
  const clock = (() => clock.now) as Clock
  clock.now = new Date(iso)
  return clock
}

export type ServiceOptions = { clock?: Clock; writer?: BriefingWriter; leaseMs?: number; quotas?: { pro: number; enterprise: number } }

/** A service as the server builds it on `db` and `store`: the local analyst, a clock standing at 2026-05-20 10:00 UTC. */
export function testService(db: Db, store: EventStore, facts: ZoneFactsSource, options: ServiceOptions = {}): BriefingService {
  return briefingServiceOn(db, store, {
    facts,
    writer: options.writer ?? localAnalyst,
    clock: options.clock ?? testClock('2026-05-20T10:00:00Z'),
    random: cryptoRandom,
    quotas: options.quotas,
    idempotencyLeaseMs: options.leaseMs,
  })
}

/**
 * Two processes' briefing services on one PostgreSQL schema: a pool of 5 connections each, each
 * following the read models itself; `options[i]` for the service of process i. `close` ends both.
 */
export async function twoProcessesOn(schema: string, facts: ZoneFactsSource, options: ServiceOptions[] = []) {
  const dbs = [await reopenPostgres(schema, 5), await reopenPostgres(schema, 5)]
  const stores = [await openSqlEventStore(dbs[0]!), await openSqlEventStore(dbs[1]!)]
  const runners = [await followBriefings(dbs[0]!, stores[0]!), await followBriefings(dbs[1]!, stores[1]!)]
  const services = dbs.map((db, i) => testService(db, stores[i]!, facts, options[i]))
  const close = async () => {
    for (const r of runners) await r.stop()
    for (const s of stores) await s.close()
    for (const d of dbs) await d.close()
  }
  return { stores, services, close }
}

/** The caller an API key of `ownerId` makes (key id `key_<owner>`). */
export const caller = (ownerId: string, tier: Caller['tier'] = 'pro'): Caller => ({ ownerId, keyId: `key_${ownerId}`, tier })

/** The AppError `promise` is refused with (the test fails if it resolves or fails otherwise). */
export async function failure(promise: Promise<unknown>): Promise<AppError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(AppError)
  return error as AppError
}
