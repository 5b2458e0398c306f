import type { EventStore, RecordedEvent } from '../eventstore/port.ts'
import { type ApiKey, evolveKey, initialKey, isKeyEvent, keyStanding, keyStream, type Scope } from '../domain/keys/key.ts'
import { evolveOwner, initialOwner, isOwnerEvent, type Owner, type OwnerEvent, ownerStream, type Tier } from '../domain/owners/owner.ts'
import { AppError, invalidRequest } from '../shared/errors.ts'

/**
 * Audit trails of keys and owners, replayed from their event streams (the record, not a read
 * model): every line has the event's position, time, type and actor and the state it resulted in,
 * and `until` stops the replay at a moment to tell the state then.
 */

/** `until` as milliseconds (no limit when absent); a bad time is a usage error. */
export function parseUntil(until: string | undefined): number {
  if (until === undefined) return Number.POSITIVE_INFINITY
  const limit = Date.parse(until)
  if (Number.isNaN(limit)) throw invalidRequest('until must be an ISO time', [{ field: 'until', message: 'Expected an ISO 8601 time, e.g. 2026-05-01T12:00:00Z' }])
  return limit
}

/** Event time: what the deciding shell recorded as `at` (all owner, key and briefing events carry it). */
const timeOf = (event: RecordedEvent) => String(event.data.at ?? event.recordedAt)

export type TrailLine<S> = {
  position: number
  at: string
  stream: string
  type: string
  actor: string | null
  /** What the event says besides time and actor (never a key hash). */
  details: Record<string, unknown>
  /** The state after this event. */
  state: S
}

const HIDDEN = new Set(['at', 'by', 'key_hash'])
const detailsOf = (event: RecordedEvent) => Object.fromEntries(Object.entries(event.data).filter(([k]) => !HIDDEN.has(k)))

const lineOf = <S>(event: RecordedEvent, state: S): TrailLine<S> => ({
  position: event.position,
  at: timeOf(event),
  stream: event.stream,
  type: event.type,
  actor: typeof event.data.by === 'string' ? event.data.by : null,
  details: detailsOf(event),
  state,
})

const domainOf = (event: RecordedEvent) => ({ type: event.type, data: event.data })

export type KeyState = {
  status: 'active' | 'revoked'
  scopes: Scope[]
  owner_tier: Tier | null
  owner_status: 'active' | 'inactive' | 'unregistered'
  /** Whether the key would have been let in then: active key, active owner, not on the free tier. */
  valid: boolean
}

const keyState = (key: ApiKey, owner: Owner): KeyState | null =>
  key.status === 'none'
    ? null
    : {
        status: key.status,
        scopes: key.scopes,
        owner_tier: owner.status === 'unregistered' ? null : owner.tier,
        owner_status: owner.status,
        valid: keyStanding(key, owner) === 'valid',
      }

export type KeyAudit = { key_id: string; owner_id: string; until: string | null; state: KeyState | null; events: TrailLine<KeyState>[] }

/**
 * The key's events and its owner's, in order: a tier change to free or a deactivation makes a key
 * invalid as surely as its revocation. `state` is as of `until` (null if the key did not exist yet).
 */
export async function auditKey(store: EventStore, keyId: string, until?: string): Promise<KeyAudit> {
  const limit = parseUntil(until)
  const own = await store.readStream(keyStream(keyId))
  const issued = own.find((e) => e.type === 'ApiKeyIssued')
  if (!issued) throw new AppError('not_found', `key ${keyId} does not exist`)
  const ownerId = String(issued.data.owner_id)
  const ownerEvents = await store.readStream(ownerStream(ownerId))
  let key: ApiKey = initialKey
  let owner: Owner = initialOwner
  const events: TrailLine<KeyState>[] = []
  for (const event of [...own, ...ownerEvents].sort((a, b) => a.position - b.position)) {
    if (Date.parse(timeOf(event)) > limit) continue
    const domain = domainOf(event)
    if (isKeyEvent(domain)) key = evolveKey(key, domain)
    else if (isOwnerEvent(domain)) owner = evolveOwner(owner, domain)
    const state = keyState(key, owner)
    // Owner events before the key existed say nothing about it, but they set the owner's state.
    if (state) events.push(lineOf(event, state))
  }
  return { key_id: keyId, owner_id: ownerId, until: until ?? null, state: keyState(key, owner), events }
}

export type OwnerState = {
  tier: Tier
  status: 'active' | 'inactive'
  /** Its keys that were active (not revoked) then. */
  active_keys: string[]
}

export type OwnerAudit = { owner_id: string; until: string | null; state: OwnerState | null; events: TrailLine<OwnerState>[] }

/** The owner's events and those of every key issued to it, in order; `state` is as of `until`. */
export async function auditOwner(store: EventStore, ownerId: string, until?: string): Promise<OwnerAudit> {
  const limit = parseUntil(until)
  const own = await store.readStream(ownerStream(ownerId))
  if (own.length === 0) throw new AppError('not_found', `owner ${ownerId} does not exist`)
  const keyEvents: RecordedEvent[] = []
  for (let after = 0; ; ) {
    const page = await store.readAll(after, { categories: ['apikey'], limit: 1000 })
    if (page.length === 0) break
    keyEvents.push(...page.filter((e) => e.data.owner_id === ownerId))
    after = page[page.length - 1]!.position
  }
  let owner: Owner = initialOwner
  const keys = new Map<string, ApiKey>()
  const state = (): OwnerState | null =>
    owner.status === 'unregistered'
      ? null
      : {
          tier: owner.tier,
          status: owner.status,
          active_keys: [...keys].filter(([, k]) => k.status === 'active').map(([id]) => id).sort(),
        }
  const events: TrailLine<OwnerState>[] = []
  for (const event of [...own, ...keyEvents].sort((a, b) => a.position - b.position)) {
    if (Date.parse(timeOf(event)) > limit) continue
    const domain = domainOf(event)
    if (isOwnerEvent(domain)) owner = evolveOwner(owner, domain as OwnerEvent)
    else if (isKeyEvent(domain)) keys.set(domain.data.key_id, evolveKey(keys.get(domain.data.key_id) ?? initialKey, domain))
    const now = state()
    if (now) events.push(lineOf(event, now))
  }
  return { owner_id: ownerId, until: until ?? null, state: state(), events }
}
