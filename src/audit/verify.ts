import { type ChainEntry, type ChainFault, type ChainRule, ChainWalk, formatHead, headMatches, parseHead, type VouchedRange } from '../eventstore/chain.ts'
import type { EventStore } from '../eventstore/port.ts'
import { fail, invalidRequest } from '../shared/errors.ts'

/** Events read per page where the store sends them: large, since each page is one query and the work per event is one hash. */
const PAGE = 20_000

/** Positions per range a store that vouches for its chain checks on its side (one query, one row back). */
const RANGE = 50_000

/** Ranges asked for ahead of the one being taken: the database checks them on its cores while this process waits. */
const AHEAD = 2

type Range = { after: number; through: number }

const holds = (range: Range, position: number) => range.after < position && position <= range.through

/** What the walk takes next: a range the store vouched for, or events to check one by one. */
type Segment = { vouched: VouchedRange } | { entries: ChainEntry[] }

type Walked = Pick<EventStore, 'chain' | 'readChain' | 'headPosition' | 'vouchChain'>

/**
 * The log in position order. Where the store vouches for its chain (the SQL stores), up to the head
 * as the walk starts, range by range, several asked for at once; a range it does not vouch for, or
 * that `mayVouch` refuses (after a fault, or holding a position whose digest is wanted), is read
 * event by event. The rest (the whole log per stream, the events appended during the walk) page by page.
 */
async function* segments(store: Walked, mayVouch: (range: Range) => boolean, size = RANGE): AsyncGenerator<Segment> {
  let last = 0
  if (store.chain === 'global' && store.vouchChain) {
    const head = await store.headPosition()
    const ahead: (Range & { answer: Promise<VouchedRange | null> })[] = []
    for (let next = 0; next < head || ahead.length > 0; ) {
      while (ahead.length < AHEAD && next < head) {
        const range = { after: next, through: Math.min(next + size, head) }
        const answer = store.vouchChain(range.after, range.through)
        // Asked ahead: must not fail the process if the walk stops first.
        answer.catch(() => {})
        ahead.push({ ...range, answer })
        next = range.through
      }
      const range = ahead.shift()!
      const vouched = mayVouch(range) ? await range.answer : null
      if (vouched) {
        yield { vouched }
        last = vouched.last?.position ?? last
        continue
      }
      for (let page = await store.readChain(last, PAGE); page.length > 0; page = await store.readChain(last, PAGE)) {
        const entries = page.filter((entry) => entry.position <= range.through)
        if (entries.length > 0) yield { entries }
        last = entries.at(-1)?.position ?? last
        if (entries.length < page.length || page.length < PAGE) break
      }
    }
  }
  for (let page = await store.readChain(last, PAGE); page.length > 0; page = await store.readChain(last, PAGE)) {
    yield { entries: page }
    last = page.at(-1)!.position
  }
}

/** What `audit verify` found: the first event at fault (if any), the head digest, and the expected digest's check. */
export type Verification = {
  chain: ChainRule
  /** Events walked (up to and including the first at fault). */
  events: number
  /** `POSITION:HEX16` of the last event walked; null for an empty log. */
  head: string | null
  fault: ChainFault | null
  /** With `--expect`: whether the log still gives that digest at its position, and if not why. */
  expected: { digest: string; matches: boolean; message: string } | null
}

/** The `--expect` digest read, or `invalid_request` naming the form. */
function expectedHead(text: string) {
  const head = parseHead(text)
  if (!head) throw invalidRequest('--expect must be a head digest as `audit verify --head` prints it: POSITION:16 hex digits (e.g. 1234:0123456789abcdef)', [{ field: 'expect', message: 'Expected POSITION:16 hex digits' }])
  return head
}

/**
 * Walks the whole log in position order, checking each event's chain link (src/eventstore/chain.ts),
 * and stops at the first event at fault. With `expect` (a head digest printed earlier), also checks
 * that the log still gives that digest at that position. `progress` is told the events walked (of
 * about `total`, the head position, where positions count events).
 */
export async function verifyLog(
  store: Walked,
  options: {
    expect?: string
    progress?: (done: number, total: number | undefined) => void
    /** Positions per vouched range (specs make it small, to put faults past ranges vouched for). */
    range?: number
  } = {},
): Promise<Verification> {
  const wanted = options.expect === undefined ? null : expectedHead(options.expect)
  const walk = new ChainWalk(store.chain, new Set(wanted ? [wanted.position] : []))
  const total = store.chain === 'global' ? await store.headPosition() : undefined
  let events = 0
  let fault: ChainFault | null = null
  // After a fault, the walk goes on only to reach the expected digest's position: its fold is of
  // the events as they are now, so the digest there still says whether they changed.
  const goOn = () => fault === null || (wanted !== null && walk.digest().position < wanted.position)
  const mayVouch = (range: Range) => fault === null && !(wanted && holds(range, wanted.position))
  for await (const segment of segments(store, mayVouch, options.range)) {
    if ('vouched' in segment) {
      walk.vouched(segment.vouched)
      events += segment.vouched.events
    } else {
      for (const entry of segment.entries) {
        const found = walk.step(entry)
        if (fault === null) events += 1
        fault ??= found
        if (!goOn()) break
      }
    }
    options.progress?.(events, total)
    if (!goOn()) break
  }
  const last = walk.digest()
  return {
    chain: store.chain,
    events,
    head: last.position === 0 ? null : formatHead(last),
    fault,
    expected: wanted && options.expect !== undefined ? expectation(options.expect, wanted, walk) : null,
  }
}

function expectation(digest: string, wanted: { position: number; prefix: string }, walk: ChainWalk) {
  const mark = walk.marks.get(wanted.position)
  if (mark) {
    const matches = headMatches(wanted, mark)
    return {
      digest,
      matches,
      message: matches
        ? `the log still gives ${digest} at position ${wanted.position}`
        : `the log gives ${formatHead(mark)} at position ${wanted.position}, not ${digest}: the events up to it were altered, inserted, deleted or reordered since that digest was recorded`,
    }
  }
  const reached = walk.digest().position
  const message =
    reached < wanted.position
        ? `the log no longer reaches position ${wanted.position} (its last event is at ${reached}): events were deleted since that digest was recorded`
        : `the log holds no event at position ${wanted.position} any more: it was deleted since that digest was recorded`
  return { digest, matches: false, message }
}

/**
 * The log's head digest at `position` (as `audit verify --head` prints it there; null for an empty
 * log), from a walk of the log up to it. A fault on the way is a `conflict` naming it: a digest of a
 * log that fails verification would vouch for what it cannot (`audit verify` tells the rest).
 */
export async function headDigestAt(store: Walked, position: number): Promise<string | null> {
  if (position === 0) return null
  const walk = new ChainWalk(store.chain, new Set([position]))
  for await (const segment of segments(store, (range) => range.through < position)) {
    if ('vouched' in segment) {
      walk.vouched(segment.vouched)
      continue
    }
    for (const entry of segment.entries) {
      if (entry.position > position) return formatHead(walk.marks.get(position) ?? walk.digest())
      const fault = walk.step(entry)
      if (fault) throw fail.conflict(`the log fails verification before position ${position}: ${fault.message}; run audit verify`)
    }
  }
  return formatHead(walk.marks.get(position) ?? walk.digest())
}
