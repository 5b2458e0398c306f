import type { RecordedEvent as KurrentRecordedEvent } from '@kurrent/kurrentdb-client'
import { describe, expect, test } from 'vitest'
import {
  CHAIN_STARTED,
  CHAIN_STREAM,
  type ChainEntry,
  type ChainFault,
  ChainWalk,
  formatHead,
  GENESIS,
  headMatches,
  linkOf,
  linksAfter,
  parseHead,
  sha256Of,
  streamLink,
} from '../../src/eventstore/chain.ts'
import { chainEntryOf, linksFor, nextLinkOf, toEventData } from '../../src/eventstore/esdb-mapping.ts'
import type { NewEvent } from '../../src/eventstore/port.ts'

/** The chain's pure part: the walk that names the first event at fault, on both rules, and the head digest. */

/** A log of `count` events over two streams, linked globally as the SQL stores link them. */
function globalLog(count: number): ChainEntry[] {
  let previous = GENESIS
  return Array.from({ length: count }, (_, i) => {
    const digest = sha256Of(`event ${i + 1}`)
    previous = linkOf(previous, digest)
    return { position: i + 1, stream: `s-${i % 2}`, revision: Math.floor(i / 2), type: 'Happened', digest, link: previous }
  })
}

function walk(entries: readonly ChainEntry[], rule: 'global' | 'per-stream' = 'global'): { fault: ChainFault | null; walk: ChainWalk } {
  const w = new ChainWalk(rule)
  for (const entry of entries) {
    const fault = w.step(entry)
    if (fault) return { fault, walk: w }
  }
  return { fault: null, walk: w }
}

describe('the global chain', () => {
  test('a whole log gives no fault, and its head digest is its last link', () => {
    const log = globalLog(5)
    const { fault, walk: w } = walk(log)
    expect(fault).toBeNull()
    expect(w.digest()).toEqual({ position: 5, digest: log[4]!.link })
  })

  test('an altered digest is named at its position; a gap before a bad link is named as the missing position', () => {
    const log = globalLog(5)
    expect(walk(log.map((e) => (e.position === 3 ? { ...e, digest: sha256Of('forged') } : e))).fault).toMatchObject({ position: 3, stream: 's-0', kind: 'altered' })
    expect(walk(log.filter((e) => e.position !== 3)).fault).toMatchObject({ position: 3, stream: 's-1', kind: 'missing' })
  })

  test('events without links before the first linked one are folded in; one without a link after it is at fault', () => {
    const log = globalLog(5).map((e) => (e.position <= 2 ? { ...e, link: null } : e))
    expect(walk(log).fault).toBeNull()
    expect(walk(log.map((e) => (e.position === 4 ? { ...e, link: null } : e))).fault).toMatchObject({ position: 4, kind: 'unchained' })
  })

  test('the upgrade\'s event that no longer chains on what came before names the range it covers', () => {
    const log = globalLog(4).map((e) => (e.position <= 3 ? { ...e, link: null } : { ...e, stream: CHAIN_STREAM, type: CHAIN_STARTED }))
    const altered = log.map((e) => (e.position === 2 ? { ...e, digest: sha256Of('forged') } : e))
    expect(walk(altered).fault).toMatchObject({ position: 4, kind: 'before-upgrade' })
    expect(walk(altered).fault!.message).toContain('one of positions 1…3')
  })

  test('the walk keeps the digest at a watched position, for --expect', () => {
    const log = globalLog(5)
    const w = new ChainWalk('global', new Set([3]))
    for (const entry of log) w.step(entry)
    expect(w.marks.get(3)).toEqual({ position: 3, digest: log[2]!.link })
  })
})

describe('the head digest', () => {
  test('printed as POSITION:16 hex digits, read back, and compared at its position', () => {
    const head = { position: 42, digest: linkOf(GENESIS, sha256Of('x')) }
    const printed = formatHead(head)
    expect(printed).toMatch(/^42:[0-9a-f]{16}$/)
    expect(parseHead(printed)).toEqual({ position: 42, prefix: printed.slice(3) })
    expect(headMatches(parseHead(printed)!, head)).toBe(true)
    expect(headMatches(parseHead(printed)!, { ...head, position: 43 })).toBe(false)
    expect(headMatches(parseHead(printed)!, { position: 42, digest: GENESIS })).toBe(false)
  })

  test('anything else is not a head digest', () => {
    for (const text of ['', '42', '42:abc', 'x:0123456789abcdef', '42:0123456789abcdefg', '-1:0123456789abcdef']) expect(parseHead(text)).toBeNull()
  })
})

/** What KurrentDB hands back of an event `toEventData` wrote (properties as its metadata). */
const asRead = (event: NewEvent, stream: string, revision: number, commit: number, chain?: Uint8Array): KurrentRecordedEvent =>
  ({
    streamId: stream,
    id: event.id,
    revision: BigInt(revision),
    type: event.type,
    data: event.data,
    metadata: toEventData(event, chain ? { chain } : {}).metadata ?? {},
    isJson: true,
    created: new Date('2026-11-28T10:00:00Z'),
    position: { commit: BigInt(commit), prepare: BigInt(commit) },
  }) as KurrentRecordedEvent

const newEvent = (n: number): NewEvent => ({ id: crypto.randomUUID(), type: 'Happened', data: { n, b: { z: 1, a: [1, 'x'] } }, metadata: n % 2 ? { actor: 'a' } : {} })

/** Two streams appended to in turns, each event linked as the KurrentDB adapter links it, read back from `$all`. */
function kurrentLog(): { events: NewEvent[]; raw: KurrentRecordedEvent[] } {
  const events = Array.from({ length: 6 }, (_, i) => newEvent(i))
  const raw: KurrentRecordedEvent[] = []
  events.forEach((event, i) => {
    const stream = `s-${i % 2}`
    const ofStream = raw.filter((r) => r.streamId === stream)
    const current = ofStream.length === 0 ? null : ofStream.length - 1
    const [link] = linksFor(stream, current, [event], nextLinkOf(ofStream))
    raw.push(asRead(event, stream, ofStream.length, 100 * (i + 1), link))
  })
  return { events, raw }
}

describe('the per-stream chain (KurrentDB)', () => {
  test('events linked as the adapter links them verify from $all', () => {
    expect(walk(kurrentLog().raw.map(chainEntryOf), 'per-stream').fault).toBeNull()
  })

  test('an event whose data differs from what was linked is named, with its stream', () => {
    const { raw } = kurrentLog()
    raw[3] = { ...raw[3]!, data: { n: 33 } } as KurrentRecordedEvent
    expect(walk(raw.map(chainEntryOf), 'per-stream').fault).toMatchObject({ position: 400, stream: 's-1', kind: 'altered' })
  })

  test('an event missing from a stream is named at the next event of that stream', () => {
    const { raw } = kurrentLog()
    expect(walk(raw.filter((_, i) => i !== 2).map(chainEntryOf), 'per-stream').fault).toMatchObject({ position: 500, stream: 's-0', kind: 'revision' })
  })

  test('a stream recorded before the chain: its next event chains on the fold of its events, which verifies', () => {
    const legacy = [newEvent(1), newEvent(2)].map((e, i) => asRead(e, 's-0', i, 10 * (i + 1)))
    expect(nextLinkOf(legacy)).toEqual(streamLink(legacy.map(chainEntryOf)))
    const next = newEvent(3)
    const [link] = linksFor('s-0', 1, [next], nextLinkOf(legacy))
    const log = [...legacy, asRead(next, 's-0', 2, 30, link)].map(chainEntryOf)
    expect(walk(log, 'per-stream').fault).toBeNull()
    expect(walk([...log, { ...log[0]!, position: 40, revision: 3, link: null }], 'per-stream').fault).toMatchObject({ position: 40, kind: 'unchained' })
  })

  test('links chain one on another from the link before them', () => {
    const digests = [sha256Of('a'), sha256Of('b')]
    expect(linksAfter(GENESIS, digests)).toEqual([linkOf(GENESIS, digests[0]!), linkOf(linkOf(GENESIS, digests[0]!), digests[1]!)])
  })
})
