import { Type } from '@sinclair/typebox'
import type { ChangeFilter } from '../domain/listings/changes.ts'
import { COUNTRIES } from '../domain/market/vocabulary.ts'
import { isKnowableZoneNumber, ZoneInput, zoneNumberOfName } from '../domain/market/zone-name.ts'
import { httpInputs } from '../http/inputs.ts'
import type { FieldError } from '../shared/errors.ts'
import { anyCaseOf, defaulted, type Parsed } from '../shared/input-schema.ts'
import { cursorTextError } from './cursor.ts'
import { EXPORT_FORMATS } from './export-formats.ts'

/** Changes one answer of GET /listings/changes carries at most, and when `limit` is absent. */
export const MAX_CHANGES = 1000
export const DEFAULT_CHANGES = 100

/** What a reader of the feed follows: every country when `country` is absent (unlike the market endpoints, whose default is GT). */
const Place = {
  country: Type.Optional(anyCaseOf(COUNTRIES, { description: 'country code; every country when absent' })),
  zone: Type.Optional({ ...ZoneInput, description: `${ZoneInput.description}; only with country` }),
}
/** A zone without a country is refused; beside a refused country, only the country is named. */
const zoneNeedsCountry = ({ country, zone }: { country?: string; zone?: string }, refused: ReadonlySet<string>): FieldError[] =>
  zone !== undefined && country === undefined && !refused.has('country') ? [{ field: 'zone', message: 'Expected with country: a zone number is one of a country' }] : []
const cursorIsOne = ({ after }: { after?: string }): FieldError[] => {
  const error = after === undefined ? null : cursorTextError(after)
  return error ? [{ field: 'after', message: error }] : []
}

export const ChangesQuery = Type.Object({
  after: Type.Optional(
    Type.String({
      maxLength: 200,
      pattern: '^c1\\.[A-Za-z0-9_-]+$',
      description: 'a cursor an answer gave (an export\'s `Mirador-Cursor`, or `next_cursor`); the beginning of the log when absent',
      examples: ['c1.MGY1YzNkOWU0YjJhMWY3OC4xMjM0NQ'],
    }),
  ),
  limit: defaulted(Type.Integer({ minimum: 1, maximum: MAX_CHANGES, description: 'changes per answer' }), DEFAULT_CHANGES),
  ...Place,
})
export const changesInputs = httpInputs({ query: ChangesQuery, refine: (valid, refused) => [...cursorIsOne(valid), ...zoneNeedsCountry(valid, refused)] })

export const ExportQuery = Type.Object({
  format: defaulted(anyCaseOf(EXPORT_FORMATS, { description: 'ndjson (one JSON record a line, then the cursor), csv or parquet' }), 'ndjson'),
  ...Place,
})
export const exportInputs = httpInputs({ query: ExportQuery, refine: zoneNeedsCountry })

/** The place a query follows. */
export function filterOf(query: Parsed<typeof ChangesQuery> | Parsed<typeof ExportQuery>): ChangeFilter {
  const zone = query.zone === undefined ? null : zoneNumberOfName(query.zone)!
  // A number no zone can have (the query allows any) follows zone 0, which no listing is in: nothing.
  return { country: query.country ?? null, zone: zone === null ? null : isKnowableZoneNumber(zone) ? zone : 0 }
}
