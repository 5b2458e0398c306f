import { type Static, type TSchema, Type } from '@sinclair/typebox'
import type { Db } from '../db/port.ts'
import { handleCommand, loadAggregate } from '../eventstore/command-handler.ts'
import type { EventStore } from '../eventstore/port.ts'
import { formatApiKey, hashApiKey, keyHint, newKeyId } from '../domain/keys/api-key.ts'
import { type ApiKey, type KeyEvent, KeyEventSchemas, decideKey, evolveKey, initialKey, keyStream } from '../domain/keys/key.ts'
import {
  type Owner,
  type OwnerEvent,
  OwnerId,
  Tier,
  decideOwner,
  evolveOwner,
  initialOwner,
  isOwnerEvent,
  ownerStream,
} from '../domain/owners/owner.ts'
import { AppError } from '../shared/errors.ts'
import { quotaAudit } from '../audit/quota.ts'
import { DEMO_DEFAULTS, MIN_DEMO_LISTINGS, demoAnchor } from '../domain/demo/market.ts'
import { seedDemo } from '../demo/seed.ts'
import { type Rejection, ingestLines } from '../listings/ingest.ts'
import { DEFAULT_FX } from '../domain/market/fx.ts'
import type { Clock, RandomSource } from '../shared/random.ts'
import { parseWith } from '../shared/validate.ts'
import type { ProjectionRunner } from '../../projections/engine/runner.ts'
import { keysOfOwner } from '../../projections/owners-and-keys/queries.ts'
import { auditKey, auditOwner } from '../audit/trail.ts'
import { importBatch, parseLine } from '../eventstore/transfer.ts'
import { diffProjection } from './projection-diff.ts'

/** A long operation's progress; `unit` (e.g. `events`) makes the terminal bar show a rate and an ETA. */
export type Progress = (update: { label: string; done: number; total: number; unit?: string }) => void

export type OperatorContext = {
  db: Db
  store: EventStore
  runner: ProjectionRunner
  clock: Clock
  random: RandomSource
  progress: Progress
}

const ownerAggregate = { initial: initialOwner, evolve: evolveOwner, is: isOwnerEvent }
const keyAggregate = {
  initial: initialKey,
  evolve: evolveKey,
  is: (e: { type: string }): e is KeyEvent => e.type in KeyEventSchemas,
}
const Actor = Type.String({ minLength: 1, maxLength: 64 })
const KeyId = Type.String({ pattern: '^key_[0-9A-Za-z]{12}$' })

async function loadOwner(store: EventStore, id: string): Promise<Owner> {
  return (await loadAggregate<Owner, OwnerEvent>(store, ownerStream(id), ownerAggregate)).state
}

function ownerCommand(type: 'ChangeOwnerTier' | 'DeactivateOwner' | 'ReactivateOwner', withTier: boolean) {
  const args = withTier
    ? Type.Object({ id: OwnerId, tier: Tier, actor: Actor })
    : Type.Object({ id: OwnerId, actor: Actor })
  return command(args, async (ctx, a: { id: string; actor: string; tier?: Static<typeof Tier> }) => {
    const at = ctx.clock().toISOString()
    const base = { ownerId: a.id, actor: a.actor, at }
    const result = await handleCommand(ctx.store, ownerStream(a.id), ownerAggregate, (owner) =>
      decideOwner(type === 'ChangeOwnerTier' ? { type, ...base, tier: a.tier! } : { type, ...base }, owner),
      ctx.random.uuid,
    )
    return { owner: ownerView(result.state), changed: result.events.length > 0 }
  })
}

const ownerView = (owner: Owner) =>
  owner.status === 'unregistered' ? null : { owner_id: owner.id, tier: owner.tier, status: owner.status }

/** An operator command: a TypeBox schema for its arguments (validated the same locally and over the socket) and its work. */
export type OperatorCommand = { args: TSchema; run(ctx: OperatorContext, args: never): Promise<unknown> }
function command<S extends TSchema, R>(args: S, run: (ctx: OperatorContext, args: Static<S>) => Promise<R>) {
  return { args, run } as OperatorCommand & { run: (ctx: OperatorContext, args: Static<S>) => Promise<R> }
}

export const operatorCommands = {
  'owner create': command(
    Type.Object({ id: OwnerId, tier: Tier, actor: Type.Optional(Actor) }),
    async (ctx, a) => {
      const at = ctx.clock().toISOString()
      const result = await handleCommand(
        ctx.store,
        ownerStream(a.id),
        ownerAggregate,
        (owner) => decideOwner({ type: 'RegisterOwner', ownerId: a.id, tier: a.tier, actor: a.actor ?? 'operator', at }, owner),
        ctx.random.uuid,
      )
      return { owner: ownerView(result.state), changed: true }
    },
  ),
  'owner set-tier': ownerCommand('ChangeOwnerTier', true),
  'owner deactivate': ownerCommand('DeactivateOwner', false),
  'owner activate': ownerCommand('ReactivateOwner', false),

  'key issue': command(
    Type.Object({
      owner: OwnerId,
      scopes: Type.Array(Type.String(), { minItems: 1 }),
      actor: Actor,
      label: Type.Optional(Type.String({ maxLength: 200 })),
    }),
    async (ctx, a) => {
      const keyId = newKeyId(ctx.random.base62(12))
      const plaintext = formatApiKey(ctx.random.base62(32))
      const [owner, actor] = await Promise.all([loadOwner(ctx.store, a.owner), loadOwner(ctx.store, a.actor)])
      const command = {
        type: 'IssueApiKey' as const,
        keyId,
        ownerId: a.owner,
        scopes: a.scopes,
        keyHash: hashApiKey(plaintext),
        hint: keyHint(plaintext),
        label: a.label ?? null,
        actor: a.actor,
        at: ctx.clock().toISOString(),
      }
      const { events } = await handleCommand(ctx.store, keyStream(keyId), keyAggregate, (key: ApiKey) =>
        decideKey(command, key, { owner, actor }), ctx.random.uuid)
      const issued = events[0]!.data as Static<typeof KeyEventSchemas.ApiKeyIssued>
      // The plaintext leaves the system here, once; it is in no event, row or log.
      return { key: plaintext, key_id: keyId, owner_id: a.owner, scopes: issued.scopes, hint: issued.hint, label: issued.label }
    },
  ),
  'key revoke': command(
    Type.Object({ key_id: KeyId, actor: Actor, reason: Type.Optional(Type.String({ maxLength: 500 })) }),
    async (ctx, a) => {
      const actor = await loadOwner(ctx.store, a.actor)
      const command = { type: 'RevokeApiKey' as const, keyId: a.key_id, actor: a.actor, reason: a.reason ?? null, at: ctx.clock().toISOString() }
      await handleCommand(ctx.store, keyStream(a.key_id), keyAggregate, (key: ApiKey) =>
        decideKey(command, key, { owner: initialOwner, actor }), ctx.random.uuid)
      return { key_id: a.key_id, status: 'revoked' }
    },
  ),
  'key list': command(Type.Object({ owner: OwnerId }), async (ctx, a) => {
    await ctx.runner.catchUp()
    if ((await loadOwner(ctx.store, a.owner)).status === 'unregistered') {
      throw new AppError('not_found', `owner ${a.owner} does not exist`)
    }
    return { owner_id: a.owner, keys: await keysOfOwner(ctx.db, a.owner) }
  }),

  'audit key': command(Type.Object({ key_id: KeyId, until: Type.Optional(Type.String()) }), (ctx, a) => auditKey(ctx.store, a.key_id, a.until)),
  'audit owner': command(Type.Object({ id: OwnerId, until: Type.Optional(Type.String()) }), (ctx, a) => auditOwner(ctx.store, a.id, a.until)),

  'audit quota': command(
    Type.Object({ id: OwnerId, month: Type.Optional(Type.String()), until: Type.Optional(Type.String()) }),
    async (ctx, a) => {
      if ((await loadOwner(ctx.store, a.id)).status === 'unregistered') throw new AppError('not_found', `owner ${a.id} does not exist`)
      // The month defaults to the one `until` falls in, else the current one.
      const untilMonth = a.until !== undefined && !Number.isNaN(Date.parse(a.until)) ? new Date(a.until).toISOString().slice(0, 7) : undefined
      const month = a.month ?? untilMonth ?? ctx.clock().toISOString().slice(0, 7)
      const entries = await quotaAudit(ctx.store, a.id, month, a.until)
      return {
        owner_id: a.id,
        month,
        until: a.until ?? null,
        used: entries.at(-1)?.used ?? 0,
        charged: entries.filter((e) => e.charged).length,
        cache_hits: entries.filter((e) => e.type === 'BriefingServedFromCache').length,
        replays: entries.filter((e) => e.type === 'BriefingReplayed').length,
        entries,
      }
    },
  ),

  'ingest lines': command(
    Type.Object({
      lines: Type.Array(Type.String(), { maxItems: 5000 }),
      first_line: Type.Integer({ minimum: 1 }),
    }),
    async (ctx, a) => {
      const rejections: Rejection[] = []
      const summary = await ingestLines(ctx.store, a.lines, {
        fx: DEFAULT_FX,
        now: ctx.clock(),
        batchSize: a.lines.length,
        onRejected: (r) => rejections.push({ ...r, line: r.line + a.first_line - 1 }),
      })
      return { read: summary.read, new: summary.new, changed: summary.changed, unchanged: summary.unchanged, rejected: summary.rejected, rejections }
    },
  ),
  'demo seed': command(
    Type.Object({
      listings: Type.Optional(Type.Integer({ minimum: MIN_DEMO_LISTINGS, maximum: 1_000_000 })),
      seed: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
      anchor: Type.Optional(Type.String({ format: 'date' })),
    }),
    async (ctx, a) => {
      const started = Date.now()
      const anchor = a.anchor ? new Date(`${a.anchor}T00:00:00.000Z`) : demoAnchor(ctx.clock())
      if (Number.isNaN(anchor.getTime())) throw new AppError('invalid_request', `anchor must be a date YYYY-MM-DD, got ${a.anchor}`)
      const options = { seed: a.seed ?? DEMO_DEFAULTS.seed, listings: a.listings ?? DEMO_DEFAULTS.listings, anchor }
      const summary = await seedDemo(ctx.store, options, (done, total) => ctx.progress({ label: 'demo seed', done, total }))
      return { ...summary, seed: options.seed, anchor: anchor.toISOString().slice(0, 10), seconds: (Date.now() - started) / 1000 }
    },
  ),

  'events read': command(
    Type.Object({ after: Type.Integer({ minimum: 0 }), limit: Type.Integer({ minimum: 1, maximum: 10_000 }) }),
    async (ctx, a) => ({ events: await ctx.store.readAll(a.after, { limit: a.limit }), head: await ctx.store.headPosition() }),
  ),
  'events import lines': command(
    Type.Object({
      lines: Type.Array(Type.String(), { maxItems: 10_000 }),
      first_line: Type.Integer({ minimum: 1 }),
      after: Type.Integer({ minimum: 0 }),
    }),
    async (ctx, a) => {
      const events = a.lines.map((text, i) => {
        const line = parseLine(text, a.first_line + i)
        if (line.kind !== 'event') throw new AppError('invalid_request', `line ${a.first_line + i}: an event was expected`)
        return line.event
      })
      return importBatch(ctx.store, events, a.first_line, a.after)
    },
  ),

  'projections status': command(Type.Object({}), async (ctx) => ({ generations: await ctx.runner.status() })),
  'projections rebuild': command(
    Type.Object({ names: Type.Array(Type.String()), hold: Type.Optional(Type.Boolean()) }),
    async (ctx, a) => {
      const built = await ctx.runner.rebuild(a.names, {
        hold: a.hold ?? false,
        progress: (name, done, total) => ctx.progress({ label: `rebuild ${name}`, done, total, unit: 'events' }),
      })
      return { built, generations: await ctx.runner.status() }
    },
  ),
  'projections diff': command(Type.Object({ name: Type.String() }), (ctx, a) =>
    diffProjection(ctx.db, ctx.runner.projection(a.name), ctx.clock(), (done, total) => ctx.progress({ label: `diff ${a.name}`, done, total })),
  ),
  'projections promote': command(Type.Object({ name: Type.String() }), (ctx, a) => ctx.runner.promote(a.name)),
  'projections rollback': command(Type.Object({ name: Type.String() }), (ctx, a) => ctx.runner.rollback(a.name)),
  'projections prune': command(Type.Object({ name: Type.String() }), (ctx, a) => ctx.runner.prune(a.name)),
} satisfies Record<string, OperatorCommand>

export type CommandName = keyof typeof operatorCommands

export const isCommandName = (name: string): name is CommandName => Object.hasOwn(operatorCommands, name)

/** Validates the arguments with the command's schema and runs it. Used by the CLI and the socket alike. */
export async function runOperatorCommand(ctx: OperatorContext, name: string, args: unknown): Promise<unknown> {
  if (!isCommandName(name)) throw new AppError('not_found', `unknown command "${name}"`)
  const chosen: OperatorCommand = operatorCommands[name]
  return chosen.run(ctx, parseWith(chosen.args, args, `arguments of "${name}"`) as never)
}
