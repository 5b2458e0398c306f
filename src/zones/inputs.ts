import { Type } from '@sinclair/typebox'
import type { Country } from '../domain/market/vocabulary.ts'
import { ZoneInput, zoneSlugOfName } from '../domain/market/zone-name.ts'
import { CountryParameter } from '../http/parameters.ts'
import type { Gate } from '../http/gate.ts'
import { echo, fail } from '../shared/errors.ts'
import { defaulted } from '../shared/input-schema.ts'
import type { Clock } from '../shared/random.ts'
import type { ReadyZones } from '../../projections/listings/ready-zones.ts'
import { AsOfParameter, type ZoneAnswers } from './point-in-time.ts'

/**
 * What the zone operations read: the prepared answers and the history behind `as_of`, and the time;
 * with `preparedFacts` and `pointInTime` (the live read model's), what each answer was computed from.
 */
export type ZoneDeps = { zones: ZoneAnswers & Pick<ReadyZones, 'facts'> & Partial<Pick<ReadyZones, 'preparedFacts' | 'pointInTime'>>; clock: Clock }
export type ZoneRouteDeps = ZoneDeps & { gate: Gate }

/** Months of GET /zone/{slug}/history: 12 unless asked, at most 36. */
const DEFAULT_MONTHS = 12
const MAX_MONTHS = 36

/** The query of GET /zones and GET /zone/{slug}. */
export const ZoneQuery = Type.Object({ country: CountryParameter, as_of: AsOfParameter })

export const HistoryQuery = Type.Object({
  country: CountryParameter,
  months: defaulted(Type.Integer({ minimum: 1, maximum: MAX_MONTHS, description: 'calendar months, the current one included' }), DEFAULT_MONTHS),
  as_of: AsOfParameter,
})

/** The zone of the path: its slug or its name (`ZoneInput`), read as its name; `slugOf` gives its slug. */
export const SlugParams = Type.Object({ slug: ZoneInput })
export const slugOf = (params: { slug: string }) => zoneSlugOfName(params.slug)

/** The 404 of a zone the country does not have. */
export const zoneNotFound = (slug: string, country: Country) => fail.notFound(`no zone ${echo(slug)} in ${country}`)
