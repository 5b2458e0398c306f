import { type ChainEntry, type ChainFault, type ChainRule, ChainWalk, formatHead, headMatches, parseHead } from '../eventstore/chain.ts'
import type { EventStore } from '../eventstore/port.ts'
import { fail, invalidRequest } from '../shared/errors.ts'

/** Events read per page: large, since each page is one query and the work per event is one hash. */
const PAGE = 20_000

/** Pages asked for ahead of the one being checked (global chain): the database digests them while this process folds. */
const AHEAD = 2

/**
 * The log page by page, in position order. On a global chain positions count events (a rolled-back
 * append may leave a gap), so the next pages are asked for before they are needed, from guessed
 * starts: a page reaches at least the next one's start unless the log ends in it, and what two
 * pages both hold is taken once. Per stream (KurrentDB: positions are byte offsets), one at a time.
 */
async function* pages(store: Pick<EventStore, 'chain' | 'readChain'>): AsyncGenerator<ChainEntry[]> {
  let last = 0
  if (store.chain === 'global') {
    const ahead: Promise<ChainEntry[]>[] = []
    for (let start = 0; ; ) {
      while (ahead.length < AHEAD) {
        // Past a gap (a sequence restarted further on) the guesses start from what was read.
        start = Math.max(start, last)
        const page = store.readChain(start, PAGE)
        // Read or not, a page asked for ahead must not fail the process if the walk stops first.
        page.catch(() => {})
        ahead.push(page)
        start += PAGE
      }
      const page = await ahead.shift()!
      const fresh = page.filter((entry) => entry.position > last)
      if (fresh.length > 0) {
        yield fresh
        last = fresh.at(-1)!.position
      }
      if (page.length < PAGE) break
    }
  }
  // The rest one page at a time: the whole log per stream, the events appended during the walk on a global chain.
  for (let page = await store.readChain(last, PAGE); page.length > 0; page = await store.readChain(last, PAGE)) {
    yield page
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
  store: Pick<EventStore, 'chain' | 'readChain' | 'headPosition'>,
  options: { expect?: string; progress?: (done: number, total: number | undefined) => void } = {},
): Promise<Verification> {
  const wanted = options.expect === undefined ? null : expectedHead(options.expect)
  const walk = new ChainWalk(store.chain, new Set(wanted ? [wanted.position] : []))
  const total = store.chain === 'global' ? await store.headPosition() : undefined
  let events = 0
  let fault: ChainFault | null = null
  // After a fault, the walk goes on only to reach the expected digest's position: its fold is of
  // the events as they are now, so the digest there still says whether they changed.
  const goOn = () => fault === null || (wanted !== null && walk.digest().position < wanted.position)
  for await (const page of pages(store)) {
    for (const entry of page) {
      const found = walk.step(entry)
      if (fault === null) events += 1
      fault ??= found
      if (!goOn()) break
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
export async function headDigestAt(store: Pick<EventStore, 'chain' | 'readChain'>, position: number): Promise<string | null> {
  if (position === 0) return null
  const walk = new ChainWalk(store.chain, new Set([position]))
  for await (const page of pages(store)) {
    for (const entry of page) {
      if (entry.position > position) return formatHead(walk.marks.get(position) ?? walk.digest())
      const fault = walk.step(entry)
      if (fault) throw fail.conflict(`the log fails verification before position ${position}: ${fault.message}; run audit verify`)
    }
  }
  return formatHead(walk.marks.get(position) ?? walk.digest())
}
