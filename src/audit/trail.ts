import type { EventStore, RecordedEvent } from '../eventstore/port.ts'
import { type ApiKey, evolveKey, initialKey, isKeyEvent, keyExpiresAt, keyStanding, keyStream, type Scope } from '../domain/keys/key.ts'
import { evolveOwner, initialOwner, isOwnerEvent, type Owner, type OwnerEvent, ownerStream, type Tier } from '../domain/owners/owner.ts'
import { fail, invalidRequest } from '../shared/errors.ts'

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
  key_id: string
  status: 'active' | 'revoked'
  scopes: Scope[]
  owner_tier: Tier | null
  owner_status: 'active' | 'inactive' | 'unregistered'
  /** The key it succeeds (`key roll`), if any. */
  rolled_from: string | null
  /** Once rolled: its successor, and the end of its grace. */
  rolled_to: string | null
  grace_ends_at: string | null
  /** Whether the key would have been let in then: active, within the grace of a roll, active owner, not on the free tier. */
  valid: boolean
}

const keyState = (key: ApiKey, owner: Owner, at: number): KeyState | null =>
  key.status === 'none'
    ? null
    : {
        key_id: key.keyId,
        status: key.status,
        scopes: key.scopes,
        owner_tier: owner.status === 'unregistered' ? null : owner.tier,
        owner_status: owner.status,
        rolled_from: key.rolledFrom,
        rolled_to: key.rolledTo?.keyId ?? null,
        grace_ends_at: key.rolledTo?.graceEndsAt ?? null,
        valid: keyStanding({ status: key.status, expiresAt: keyExpiresAt(key) }, owner, at) === 'valid',
      }

/** A key linked to the audited one by a roll: the key it succeeds, or its successor. */
export type LinkedKey = { key_id: string; relation: 'predecessor' | 'successor'; state: KeyState | null }

export type KeyAudit = {
  key_id: string
  owner_id: string
  until: string | null
  state: KeyState | null
  linked: LinkedKey[]
  events: TrailLine<KeyState>[]
}

/**
 * The key's events, its owner's and those of the keys a roll links it to (the one it succeeds, the
 * one that succeeds it), in order: a tier change to free or a deactivation makes a key invalid as
 * surely as its revocation. A line of a linked key carries that key's state; the others the audited
 * key's. A rolled key expires at its grace end with no event, so validity is told at a time: each
 * line's at its event's, `state` and `linked` at `until` (or `now`; null if the key did not exist yet).
 */
export async function auditKey(store: EventStore, keyId: string, until: string | undefined, now: number): Promise<KeyAudit> {
  const limit = parseUntil(until)
  const own = await store.readStream(keyStream(keyId))
  const issued = own.find((e) => e.type === 'ApiKeyIssued')
  if (!issued) throw fail.notFound(`key ${keyId} does not exist`)
  const ownerId = String(issued.data.owner_id)
  const links: { key_id: string; relation: LinkedKey['relation'] }[] = []
  if (typeof issued.data.rolled_from === 'string') links.push({ key_id: issued.data.rolled_from, relation: 'predecessor' })
  const rolled = own.find((e) => e.type === 'ApiKeyRolled')
  if (rolled) links.push({ key_id: String(rolled.data.successor_key_id), relation: 'successor' })
  const streams = await Promise.all([ownerStream(ownerId), ...links.map((l) => keyStream(l.key_id))].map((s) => store.readStream(s)))
  const keys = new Map<string, ApiKey>([keyId, ...links.map((l) => l.key_id)].map((id) => [id, initialKey]))
  let owner: Owner = initialOwner
  const events: TrailLine<KeyState>[] = []
  for (const event of [...own, ...streams.flat()].sort((a, b) => a.position - b.position)) {
    const time = Date.parse(timeOf(event))
    if (time > limit) continue
    const domain = domainOf(event)
    let about = keyId
    if (isKeyEvent(domain)) {
      about = domain.data.key_id
      keys.set(about, evolveKey(keys.get(about)!, domain))
    } else if (isOwnerEvent(domain)) owner = evolveOwner(owner, domain)
    const state = keyState(keys.get(about)!, owner, time)
    // Owner events before the key existed say nothing about it, but they set the owner's state.
    if (state) events.push(lineOf(event, state))
  }
  const at = Math.min(limit, now)
  return {
    key_id: keyId,
    owner_id: ownerId,
    until: until ?? null,
    state: keyState(keys.get(keyId)!, owner, at),
    linked: links.map((l) => ({ ...l, state: keyState(keys.get(l.key_id)!, owner, at) })),
    events,
  }
}

export type OwnerState = {
  tier: Tier
  status: 'active' | 'inactive'
  /** Its keys that were active then (not revoked, not past the grace of a roll). */
  active_keys: string[]
}

export type OwnerAudit = { owner_id: string; until: string | null; state: OwnerState | null; events: TrailLine<OwnerState>[] }

/** The owner's events and those of every key issued to it, in order; `state` is as of `until` (or `now`). */
export async function auditOwner(store: EventStore, ownerId: string, until: string | undefined, now: number): Promise<OwnerAudit> {
  const limit = parseUntil(until)
  const own = await store.readStream(ownerStream(ownerId))
  if (own.length === 0) throw fail.notFound(`owner ${ownerId} does not exist`)
  const keyEvents: RecordedEvent[] = []
  for (let after = 0; ; ) {
    const page = await store.readAll(after, { categories: ['apikey'], limit: 1000 })
    if (page.length === 0) break
    keyEvents.push(...page.filter((e) => e.data.owner_id === ownerId))
    after = page[page.length - 1]!.position
  }
  let owner: Owner = initialOwner
  const keys = new Map<string, ApiKey>()
  const live = (key: ApiKey, at: number) => key.status === 'active' && !((keyExpiresAt(key) ?? Number.POSITIVE_INFINITY) <= at)
  const state = (at: number): OwnerState | null =>
    owner.status === 'unregistered'
      ? null
      : {
          tier: owner.tier,
          status: owner.status,
          active_keys: [...keys].filter(([, k]) => live(k, at)).map(([id]) => id).sort(),
        }
  const events: TrailLine<OwnerState>[] = []
  for (const event of [...own, ...keyEvents].sort((a, b) => a.position - b.position)) {
    const time = Date.parse(timeOf(event))
    if (time > limit) continue
    const domain = domainOf(event)
    if (isOwnerEvent(domain)) owner = evolveOwner(owner, domain as OwnerEvent)
    else if (isKeyEvent(domain)) keys.set(domain.data.key_id, evolveKey(keys.get(domain.data.key_id) ?? initialKey, domain))
    const then = state(time)
    if (then) events.push(lineOf(event, then))
  }
  return { owner_id: ownerId, until: until ?? null, state: state(Math.min(limit, now)), events }
}
