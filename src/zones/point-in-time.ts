import { Type } from '@sinclair/typebox'
import type { Computed, PointInTime, PreparedFacts, ReadyZones } from '../../projections/listings/ready-zones.ts'
import type { ZoneDetail, ZoneHistoryMonth, ZoneSummary } from '../domain/market/zone-figures.ts'
import type { Country } from '../domain/market/vocabulary.ts'
import { isKnowableZoneNumber, zoneName, zoneNumberOfSlug, zoneSlug } from '../domain/market/zone-name.ts'
import { historyMonth, monthEnds, zoneDetailAt, zonesAt } from '../domain/market/zone-statistics.ts'
import { expecting } from '../shared/input-schema.ts'
import { invalidRequest } from '../shared/errors.ts'
import type { FieldError } from '../shared/errors.ts'

/** Where the zone routes get their figures: the prepared answers (ReadyZones), or a read model rebuilt for an audit (src/audit/answer.ts). */
export type ZoneAnswers = Pick<ReadyZones, 'factsAt' | 'firstEvent'>

/** An ISO 8601 instant: a date and time with an offset (`Z`, `-06:00`), seconds and milliseconds optional. */
const INSTANT = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,3})?)?(Z|[+-]\\d{2}:\\d{2})$'

/** The `as_of` query parameter of the zone endpoints. */
export const AsOfParameter = Type.Optional(
  expecting(
    Type.String({
      pattern: INSTANT,
      description:
        "answer as the market stood at this instant (ISO 8601 with offset, a real calendar time), by the feed's own times; not after the time of the request, not before the first listing event (else 400)",
      examples: ['2026-04-01T00:00:00Z'],
    }),
    'Expected an ISO 8601 instant with offset, e.g. 2026-04-01T00:00:00Z',
  ),
)

/** The instant of a well-formed `as_of`, or null for an impossible date such as 2026-02-30T00:00Z. */
function instantOf(text: string): Date | null {
  const [year, month, day] = [Number(text.slice(0, 4)), Number(text.slice(5, 7)), Number(text.slice(8, 10))]
  const calendar = new Date(Date.UTC(year, month - 1, day))
  const valid = calendar.getUTCFullYear() === year && calendar.getUTCMonth() === month - 1 && calendar.getUTCDate() === day
  const millis = Date.parse(text)
  return valid && !Number.isNaN(millis) && Number(text.slice(11, 13)) < 24 && Number(text.slice(14, 16)) < 60 ? new Date(millis) : null
}

/** The input check of `as_of` (refine of the zone inputs): a real calendar instant. */
export const asOfProblems = (asOf: string | undefined): FieldError[] =>
  asOf !== undefined && instantOf(asOf) === null ? [{ field: 'as_of', message: 'is not a valid calendar instant' }] : []

/**
 * The instant asked, or null without `as_of`: 400 when it is after `now` (no figures exist yet) or
 * before the first listing event (no market was known).
 */
export async function instantAsked(asOf: string | undefined, now: Date, zones: ZoneAnswers): Promise<Date | null> {
  if (asOf === undefined) return null
  const at = instantOf(asOf)!
  if (at > now) throw invalidRequest(`as_of ${asOf} is in the future (now is ${now.toISOString()})`, IN_THE_FUTURE)
  const first = await zones.firstEvent()
  if (before(at, first)) {
    const since = first === null ? 'no listing has been recorded yet' : `the first listing event is at ${first}`
    throw invalidRequest(`as_of ${asOf} is before any market data (${since})`, BEFORE_ANY_DATA)
  }
  return at
}

const IN_THE_FUTURE = [{ field: 'as_of', message: 'is in the future' }]
const BEFORE_ANY_DATA = [{ field: 'as_of', message: 'is before any market data' }]
const before = (at: Date, first: string | null) => first === null || at < new Date(first)

/**
 * The problems of `as_of` that `instantAsked` finds, for a request refused for other parameters too
 * (`checkedWhenRefused`): the refusal names them all at once.
 */
export function asOfRangeChecks(zones: ZoneAnswers, clock: () => Date) {
  return async () => {
    const now = clock()
    const first = await zones.firstEvent()
    return ({ as_of }: { as_of?: string }): FieldError[] => {
      const at = as_of === undefined ? null : instantOf(as_of)
      if (at === null) return []
      return at > now ? IN_THE_FUTURE : before(at, first) ? BEFORE_ANY_DATA : []
    }
  }
}

/**
 * `read`'s answer from one state of the read model, with that state's position and generation when
 * the zones say (the live read model's `pointInTime`; an audit's rebuilt one is read as it is).
 */
export async function fromOneState<V extends Pick<ZoneAnswers, 'factsAt'>, T>(
  zones: V & Partial<Pick<ReadyZones, 'pointInTime'>>,
  read: (view: V | PointInTime) => Promise<T>,
): Promise<Computed<T>> {
  return zones.pointInTime ? zones.pointInTime(read) : { value: await read(zones) }
}

/** A country's prepared facts, with the preparation's position and generation when the zones say (`preparedFacts`). */
export async function preparedOf(zones: Pick<ReadyZones, 'facts'> & Partial<Pick<ReadyZones, 'preparedFacts'>>, country: Country): Promise<Computed<PreparedFacts['facts']>> {
  if (!zones.preparedFacts) return { value: await zones.facts(country) }
  const { facts, at } = await zones.preparedFacts(country)
  return { value: facts, at }
}

/** GET /zones's zones of `country` as the market stood at `at`. */
export async function zonesAsOf(zones: Pick<ZoneAnswers, 'factsAt'>, country: Country, at: Date): Promise<ZoneSummary[]> {
  return zonesAt(await zones.factsAt(country, at, undefined, 'summary'), at)
}

const knowable = (slug: string): number | null => {
  const zoneNo = zoneNumberOfSlug(slug)
  return zoneNo !== null && isKnowableZoneNumber(zoneNo) ? zoneNo : null
}

/** GET /zone/{slug}'s record as the market stood at `at`, or null when the country had no such zone then. */
export async function zoneAsOf(zones: Pick<ZoneAnswers, 'factsAt'>, country: Country, slug: string, at: Date): Promise<ZoneDetail | null> {
  const zoneNo = knowable(slug)
  return zoneNo === null ? null : zoneDetailAt(await zones.factsAt(country, at, zoneNo), slug, at)
}

/**
 * The zone's figures at the end of each of the last `months` calendar months (UTC) up to `at`'s
 * (at `at` for its own month), oldest first, by the definitions of /zone/{slug}; null when the
 * country had no such zone at `at`.
 */
export async function zoneHistory(
  zones: Pick<ZoneAnswers, 'factsAt'>,
  country: Country,
  slug: string,
  months: number,
  at: Date,
): Promise<{ zone: string; slug: string; history: ZoneHistoryMonth[] } | null> {
  const zoneNo = knowable(slug)
  if (zoneNo === null || !(await zones.factsAt(country, at, zoneNo, 'history')).has(zoneNo)) return null
  const history: ZoneHistoryMonth[] = []
  for (const end of monthEnds(at, months)) history.push(historyMonth(end, (await zones.factsAt(country, end.at, zoneNo, 'history')).get(zoneNo)))
  return { zone: zoneName(zoneNo), slug: zoneSlug(zoneNo), history }
}
