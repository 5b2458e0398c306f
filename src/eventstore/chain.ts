/**
 * The log's hash chain (docs/decisions/0115-tamper-evident-log.md), its pure part: how a link is
 * made, how a walk over the log checks each event's link and names the first one at fault, and
 * the head digest an auditor writes down. The adapters compute each event's content digest (the
 * SQL stores in SQL, from the stored columns; KurrentDB in TS, `contentDigest`) and hand entries here.
 */
import { createHash } from 'node:crypto'

/** The link before a store's first event. */
export const GENESIS: Uint8Array = Buffer.alloc(32)

/** The stream and type of the event an upgrade records when it starts the chain on a store that had events without one. */
export const CHAIN_STREAM = 'log-chain'
export const CHAIN_STARTED = 'LogChainStarted'

/**
 * How a store chains its events. `global` (PGlite, PostgreSQL: appends are serialised, so each
 * event links to the one before it in the log); `per-stream` (KurrentDB: several processes append
 * without a global lock, so each event links to the one before it in its stream).
 */
export type ChainRule = 'global' | 'per-stream'

/** One event as the verification reads it: where it is, the digest of its content, and the link recorded with it (null: none). */
export type ChainEntry = {
  position: number
  stream: string
  revision: number
  type: string
  digest: Uint8Array
  link: Uint8Array | null
}

/**
 * A range of the log (positions after one, up to another) whose every event the store checked on
 * its side to carry the link its content and the event before it give: how many events it holds,
 * and the last one's position and link (null: none in the range). Global chain only.
 */
export type VouchedRange = { events: number; last: { position: number; link: Uint8Array } | null }

/** `sha256(previous link ‖ content digest)`: the link recorded with an event. */
export const linkOf = (previous: Uint8Array, digest: Uint8Array): Uint8Array => createHash('sha256').update(previous).update(digest).digest()

/** The digest of a text (the canonical content of an event). */
export const sha256Of = (text: string): Uint8Array => createHash('sha256').update(text).digest()

/** JSON with keys sorted at every level: equal values, equal text (PostgreSQL's jsonb reorders keys). */
export function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`
  }
  return JSON.stringify(value)
}

/**
 * The content digest of an event where the store builds no text of it (KurrentDB, in TS): what is
 * recorded of it but the position and the time, which the server assigns after the link is made.
 */
export const eventDigest = (e: { id: string; stream: string; revision: number; type: string; data: unknown; metadata: unknown }): Uint8Array =>
  sha256Of(canonical([e.id.toLowerCase(), e.stream, e.revision, e.type, e.data, e.metadata]))

/**
 * What a stream's next event links to (per-stream chain): the link its last event carries, or, for
 * a stream whose events were recorded before the chain, the fold of their digests (none: GENESIS).
 */
export function streamLink(events: readonly { digest: Uint8Array; link: Uint8Array | null }[]): Uint8Array {
  const last = events.at(-1)
  if (!last) return GENESIS
  if (last.link) return last.link
  return events.reduce((previous, e) => linkOf(previous, e.digest), GENESIS)
}

/** Links for events appended after `previous`, each chaining on the one before it. */
export function linksAfter(previous: Uint8Array, digests: readonly Uint8Array[]): Uint8Array[] {
  const links: Uint8Array[] = []
  for (const digest of digests) links.push((previous = linkOf(previous, digest)))
  return links
}

const sameBytes = (a: Uint8Array, b: Uint8Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(b)

export const hexOf = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex')

/** What is wrong with the first event at fault. */
export type ChainFault = {
  position: number
  stream: string
  /**
   * `altered`: its link is not the one its content and its predecessor give (changed, inserted or moved);
   * `missing`: the positions skip and the event after the gap does not chain on the one before it (deleted);
   * `unchained`: it carries no link where the chain has started (written around Mirador);
   * `revision`: its stream's revisions skip or repeat (per-stream);
   * `before-upgrade`: the upgrade's event no longer chains on the events before it (one of those changed).
   */
  kind: 'altered' | 'missing' | 'unchained' | 'revision' | 'before-upgrade'
  message: string
}

/** The log's digest at a position: its link (global) or the fold of the links up to it (per-stream). */
export type HeadDigest = { position: number; digest: Uint8Array }

/** How many hex digits of the digest the printed head carries (64 bits: a forgery cannot be searched for). */
const HEAD_HEX = 16

/** `POSITION:HEX16`, what `audit verify --head` prints. */
export const formatHead = (head: HeadDigest): string => `${head.position}:${hexOf(head.digest).slice(0, HEAD_HEX)}`

/** A printed head read back, or null if it is not one. */
export function parseHead(text: string): { position: number; prefix: string } | null {
  const match = /^(\d{1,16}):([0-9a-f]{16})$/i.exec(text.trim())
  if (!match) return null
  const position = Number(match[1])
  return Number.isSafeInteger(position) ? { position, prefix: match[2]!.toLowerCase() } : null
}

/** Whether the log's digest at the printed head's position is the one printed. */
export const headMatches = (expected: { position: number; prefix: string }, actual: HeadDigest): boolean =>
  actual.position === expected.position && hexOf(actual.digest).slice(0, HEAD_HEX) === expected.prefix

const where = (e: ChainEntry) => `position ${e.position} (${e.type} in stream ${e.stream} at revision ${e.revision})`

/**
 * A walk over the log in position order: `step` each entry, it returns the first fault (and the walk
 * stops being useful after one). Events recorded before the chain started (no link, before any
 * linked event, or before its stream's first linked event per stream) are folded in unchecked:
 * the first linked event after them covers them.
 */
export class ChainWalk {
  private previous: Uint8Array = GENESIS
  private last: { position: number } | null = null
  private started = false
  private fold: Uint8Array = GENESIS
  private readonly streams = new Map<string, { revision: number; link: Uint8Array; started: boolean }>()
  private head: HeadDigest = { position: 0, digest: GENESIS }
  /** Digests at the positions asked for (`--expect`), as the walk passes them. */
  readonly marks = new Map<number, HeadDigest>()

  constructor(
    readonly rule: ChainRule,
    private readonly watched: ReadonlySet<number> = new Set(),
  ) {}

  /** The log's digest after the last entry stepped. */
  digest(): HeadDigest {
    return this.head
  }

  step(entry: ChainEntry): ChainFault | null {
    const fault = this.rule === 'global' ? this.global(entry) : this.perStream(entry)
    this.last = { position: entry.position }
    if (this.watched.has(entry.position)) this.marks.set(entry.position, this.head)
    return fault
  }

  /**
   * Takes a range the store vouched for as walked: every link in it checked against the stored one
   * before it, so, on a walk without a fault so far, the walk's link after it is its last stored one.
   */
  vouched(range: VouchedRange): void {
    if (this.rule !== 'global') throw new Error('only a global chain is vouched for by range')
    if (!range.last) return
    this.previous = range.last.link
    this.head = { position: range.last.position, digest: range.last.link }
    this.last = { position: range.last.position }
    this.started = true
  }

  private global(entry: ChainEntry): ChainFault | null {
    const expected = linkOf(this.previous, entry.digest)
    this.previous = expected
    this.head = { position: entry.position, digest: expected }
    if (entry.link === null) {
      if (!this.started) return null
      return { position: entry.position, stream: entry.stream, kind: 'unchained', message: `${where(entry)} carries no chain link: it was written around Mirador, or by a version without the chain` }
    }
    const first = !this.started
    this.started = true
    if (sameBytes(entry.link, expected)) return null
    return this.mismatch(entry, first)
  }

  private mismatch(entry: ChainEntry, first: boolean): ChainFault {
    if (first && entry.type === CHAIN_STARTED && entry.stream === CHAIN_STREAM) {
      return {
        position: entry.position,
        stream: entry.stream,
        kind: 'before-upgrade',
        message: `${where(entry)}: the events before it, recorded before the chain started, no longer give the digest the upgrade recorded: one of positions 1…${this.last?.position ?? 0} was altered, inserted, deleted or reordered (or this event itself was altered)`,
      }
    }
    const before = this.last?.position ?? 0
    if (entry.position > before + 1) {
      return {
        position: before + 1,
        stream: entry.stream,
        kind: 'missing',
        message: `position ${before + 1}: missing — the log skips from position ${before} to ${where(entry)}, which does not chain on position ${before}: an event was deleted (or position ${entry.position} was altered)`,
      }
    }
    return { position: entry.position, stream: entry.stream, kind: 'altered', message: `${where(entry)} does not chain on position ${before}: it was altered, inserted or moved` }
  }

  private perStream(entry: ChainEntry): ChainFault | null {
    const known = this.streams.get(entry.stream)
    const expectedRevision = known ? known.revision + 1 : 0
    const expected = linkOf(known?.link ?? GENESIS, entry.digest)
    this.fold = linkOf(this.fold, expected)
    this.head = { position: entry.position, digest: this.fold }
    this.streams.set(entry.stream, { revision: entry.revision, link: expected, started: (known?.started ?? false) || entry.link !== null })
    if (entry.revision !== expectedRevision) {
      return { position: entry.position, stream: entry.stream, kind: 'revision', message: `${where(entry)}: its stream's previous event is at revision ${expectedRevision - 1}: events of the stream were deleted or reordered` }
    }
    if (entry.link === null) {
      if (!known?.started) return null
      return { position: entry.position, stream: entry.stream, kind: 'unchained', message: `${where(entry)} carries no chain link: it was written around Mirador, or by a version without the chain` }
    }
    if (sameBytes(entry.link, expected)) return null
    return { position: entry.position, stream: entry.stream, kind: 'altered', message: `${where(entry)} does not chain on its stream's previous event: it or an event before it in the stream was altered` }
  }
}
