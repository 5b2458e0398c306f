import { type Static, Type } from '@sinclair/typebox'
import type { FieldError } from '../../shared/errors.ts'
import { fieldErrors, isValid } from '../../shared/validate.ts'
import { COUNTRY_CURRENCIES } from '../market/vocabulary.ts'
import { FEED_ABSENT, FEED_HINTS, feedProperties } from './fields.ts'

export { Broker } from './fields.ts'

/** One line of a listings feed, as written by a broker export or a scraper (docs/feed-format.md); its fields are declared in fields.ts. */
export const FeedLine = Type.Object(feedProperties(), { additionalProperties: false })
export type FeedLine = Static<typeof FeedLine>

/** A validated feed line: times normalised to UTC ISO strings, absent optionals made explicit. */
export type FeedRecord = { [K in keyof FeedLine]-?: Exclude<FeedLine[K], undefined> }

export type FeedLineResult =
  | { ok: true; record: FeedRecord }
  | { ok: false; line: number; reason: string; details: FieldError[] }

const rejected = (line: number, details: FieldError[]): FeedLineResult => ({
  ok: false,
  line,
  reason: `line ${line}: ${details.map((d) => (d.field === '(root)' ? d.message : `${d.field}: ${d.message}`)).join('; ')}`,
  details,
})

/** Milliseconds of an ISO time matching ISO_TIME, or null for an impossible date such as 2026-02-30. */
function isoMillis(text: string): number | null {
  const [year, month, day] = [Number(text.slice(0, 4)), Number(text.slice(5, 7)), Number(text.slice(8, 10))]
  const calendar = new Date(Date.UTC(year, month - 1, day))
  if (calendar.getUTCFullYear() !== year || calendar.getUTCMonth() !== month - 1 || calendar.getUTCDate() !== day) return null
  const millis = Date.parse(text)
  return Number.isNaN(millis) ? null : millis
}

/** The longest feed line, in bytes of UTF-8 (docs/feed-format.md): a listing takes a few hundred. */
export const MAX_FEED_LINE_BYTES = 1024 * 1024

/** The refusal of a line over MAX_FEED_LINE_BYTES, or null: checked before the line is sent or parsed. */
export function oversizedLine(text: string, lineNo: number): FeedLineResult | null {
  // Each UTF-16 unit is at most 3 bytes of UTF-8: most lines are settled without counting.
  if (text.length * 3 <= MAX_FEED_LINE_BYTES) return null
  const bytes = Buffer.byteLength(text)
  return bytes > MAX_FEED_LINE_BYTES ? rejected(lineNo, [{ field: '(root)', message: `${bytes} bytes; a feed line may be at most 1 MiB (1048576 bytes)` }]) : null
}

/**
 * How far ahead of the time of the run a line's `observed_at` may be (docs/feed-format.md): the
 * clock skew between the machine that wrote the feed and the one ingesting it. A line observed
 * later is in the future and refused: it would date the listing's state (and `updated_at`) ahead.
 */
export const MAX_OBSERVED_AHEAD_MS = 5 * 60 * 1000

/**
 * Parses and validates one feed line. `now` is the time of the ingestion run (the shell passes its
 * clock): the default of `observed_at`, and the latest it may be (give or take MAX_OBSERVED_AHEAD_MS).
 * The result names the line number and every offending field.
 */
export function parseFeedLine(text: string, lineNo: number, now: Date): FeedLineResult {
  const oversized = oversizedLine(text, lineNo)
  if (oversized) return oversized
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (error) {
    return rejected(lineNo, [{ field: '(root)', message: `not valid JSON (${(error as Error).message})` }])
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return rejected(lineNo, [{ field: '(root)', message: 'must be a JSON object' }])
  }
  if (!isValid(FeedLine, value)) {
    const details = fieldErrors(FeedLine, value).map(({ field, message }) => {
      const top = field.split('.')[0]!
      const known = top in FeedLine.properties
      if (!known) return { field, message: 'is not a feed field' }
      return { field, message: (field === top || top === 'broker') && FEED_HINTS[top] ? FEED_HINTS[top] : message }
    })
    return rejected(lineNo, details)
  }
  return checkRecord(value, lineNo, now)
}

/** Rules across fields, and time normalisation. */
function checkRecord(line: FeedLine, lineNo: number, now: Date): FeedLineResult {
  const problems: FieldError[] = []
  const time = (field: 'listed_at' | 'verified_at' | 'observed_at', text: string | null | undefined) => {
    if (text == null) return null
    const millis = isoMillis(text)
    if (millis === null) problems.push({ field, message: 'is not a valid calendar date' })
    return millis
  }
  const listed = time('listed_at', line.listed_at)
  const verified = time('verified_at', line.verified_at)
  const observed = line.observed_at === undefined ? now.getTime() : time('observed_at', line.observed_at)

  if (line.source === 'broker' && !line.broker) problems.push({ field: 'broker', message: 'is required for source broker' })
  const allowed = COUNTRY_CURRENCIES[line.country]
  if (!allowed.includes(line.currency)) {
    problems.push({ field: 'currency', message: `${line.currency} is not used in ${line.country} (use ${allowed.join(' or ')})` })
  }
  if (observed !== null && observed > now.getTime() + MAX_OBSERVED_AHEAD_MS) {
    const minutes = MAX_OBSERVED_AHEAD_MS / 60_000
    problems.push({ field: 'observed_at', message: `is in the future (more than ${minutes} minutes after the time of the run, ${now.toISOString()})` })
  }
  if (listed !== null && observed !== null && listed > observed) {
    problems.push({ field: 'listed_at', message: 'is after observed_at' })
  }
  if (verified !== null && listed !== null && verified < listed) {
    problems.push({ field: 'verified_at', message: 'is before listed_at' })
  }
  if (verified !== null && observed !== null && verified > observed) {
    problems.push({ field: 'verified_at', message: 'is after observed_at' })
  }
  if (problems.length > 0) return rejected(lineNo, problems)

  const iso = (millis: number | null) => (millis === null ? null : new Date(millis).toISOString())
  // A field the line leaves out takes the value fields.ts declares for it (`absent`).
  const filled: Record<string, unknown> = { ...line }
  for (const [name, value] of FEED_ABSENT) filled[name] ??= value
  return {
    ok: true,
    record: { ...filled, listed_at: iso(listed)!, verified_at: iso(verified), observed_at: iso(observed)! } as FeedRecord,
  }
}
