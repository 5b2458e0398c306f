import { type Static, Type } from '@sinclair/typebox'
import type { FieldError } from '../../shared/errors.ts'
import { fieldErrors, isValid } from '../../shared/validate.ts'
import {
  COUNTRIES,
  COUNTRY_CURRENCIES,
  CURRENCIES,
  Country,
  Currency,
  OPERATIONS,
  Operation,
  PROPERTY_TYPES,
  PropertyType,
  SOURCES,
  Source,
} from '../market/vocabulary.ts'

/** ISO 8601: a calendar date (midnight UTC) or a date-time with an explicit offset. */
const ISO_TIME = '^\\d{4}-\\d{2}-\\d{2}(T\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,9})?)?(Z|[+-]\\d{2}:?\\d{2}))?$'
const IsoTime = Type.String({ pattern: ISO_TIME, description: 'ISO 8601 time with offset, or a date' })
/** `Zona N`, N from 1 to 999999. */
const FEED_ZONE = '^Zona [1-9][0-9]{0,5}$'
const Status = Type.Union([Type.Literal('active'), Type.Literal('delisted')])
const STATUSES = Status.anyOf.map((member) => member.const)

export const Broker = Type.Object(
  { id: Type.String({ minLength: 1, maxLength: 100 }), name: Type.String({ minLength: 1, maxLength: 200 }) },
  { additionalProperties: false },
)
export type Broker = Static<typeof Broker>

/** One line of a listings feed, as written by a broker export or a scraper (docs/feed-format.md). */
export const FeedLine = Type.Object(
  {
    source: Source,
    source_id: Type.String({ minLength: 1, maxLength: 200 }),
    country: Country,
    zone: Type.String({ pattern: FEED_ZONE }),
    operation: Operation,
    property_type: PropertyType,
    price: Type.Number({ exclusiveMinimum: 0, maximum: 1e13 }),
    currency: Currency,
    area_m2: Type.Number({ exclusiveMinimum: 0, maximum: 1e8 }),
    bedrooms: Type.Integer({ minimum: 0, maximum: 100 }),
    bathrooms: Type.Number({ minimum: 0, maximum: 100 }),
    title: Type.String({ minLength: 1, maxLength: 300 }),
    broker: Type.Optional(Type.Union([Broker, Type.Null()])),
    url: Type.Optional(Type.Union([Type.String({ pattern: '^https?://\\S+$', maxLength: 2000 }), Type.Null()])),
    listed_at: IsoTime,
    verified_at: Type.Optional(Type.Union([IsoTime, Type.Null()])),
    status: Status,
    observed_at: Type.Optional(IsoTime),
  },
  { additionalProperties: false },
)
export type FeedLine = Static<typeof FeedLine>

/** A validated feed line: times normalised to UTC ISO strings, absent optionals made explicit. */
export type FeedRecord = Omit<FeedLine, 'broker' | 'url' | 'verified_at' | 'observed_at'> & {
  broker: Broker | null
  url: string | null
  verified_at: string | null
  observed_at: string
}

export type FeedLineResult =
  | { ok: true; record: FeedRecord }
  | { ok: false; line: number; reason: string; details: FieldError[] }

/** Messages a person can act on, for the fields whose generic schema message would not say what is allowed. */
const FRIENDLY: Record<string, string> = {
  source: `must be one of ${SOURCES.join(', ')}`,
  country: `must be one of ${COUNTRIES.join(', ')}`,
  zone: 'must be "Zona N" with N from 1 to 999999',
  operation: `must be one of ${OPERATIONS.join(', ')}`,
  property_type: `must be one of ${PROPERTY_TYPES.join(', ')}`,
  currency: `must be one of ${CURRENCIES.join(', ')}`,
  status: `must be one of ${STATUSES.join(', ')}`,
  listed_at: 'must be an ISO 8601 time with offset (e.g. 2026-03-01T12:00:00Z) or a date',
  verified_at: 'must be null or an ISO 8601 time with offset (e.g. 2026-03-01T12:00:00Z) or a date',
  observed_at: 'must be an ISO 8601 time with offset (e.g. 2026-03-01T12:00:00Z) or a date',
  url: 'must be null or an http(s) URL',
  broker: 'must be null or {"id": "...", "name": "..."}',
}

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
 * Parses and validates one feed line. `now` is the default of `observed_at` (the shell passes the
 * time of the ingestion run). The result names the line number and every offending field.
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
      return { field, message: (field === top || top === 'broker') && FRIENDLY[top] ? FRIENDLY[top] : message }
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
  return {
    ok: true,
    record: {
      ...line,
      broker: line.broker ?? null,
      url: line.url ?? null,
      listed_at: iso(listed)!,
      verified_at: iso(verified),
      observed_at: iso(observed)!,
    },
  }
}
