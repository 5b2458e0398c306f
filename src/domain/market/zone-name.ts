import { Type } from '@sinclair/typebox'
import { expecting, lettersInAnyCase, spelledAnyOf } from '../../shared/input-schema.ts'

/**
 * Zones are numbered per country. The customer writes them `Zona N` (feeds); answers give both the
 * name `Zona N` and the slug `zona-N`. Both forms are canonical: no leading zeros, N ≥ 1. A client
 * may name a zone either way wherever it names one (`ZoneInput`).
 */
export const ZONE_NAME_PATTERN = '^Zona [1-9][0-9]*$'
export const ZONE_SLUG_PATTERN = '^zona-[1-9][0-9]*$'
/** Feeds may number zones up to here; a larger number can name no known zone. */
export const MAX_ZONE_NUMBER = 999_999

const NAME = new RegExp(ZONE_NAME_PATTERN)
const SLUG = new RegExp(ZONE_SLUG_PATTERN)

export const zoneName = (zoneNumber: number) => `Zona ${zoneNumber}`
export const zoneSlug = (zoneNumber: number) => `zona-${zoneNumber}`

/** The slug of a canonical name `Zona N`, digit for digit. */
export const zoneSlugOfName = (name: string) => `zona-${name.slice(5)}`

/** The zone number of `Zona N` (exact spelling), or null. */
export const zoneNumberOfName = (name: string): number | null => (NAME.test(name) ? Number(name.slice(5)) : null)

/** The zone number of `zona-N`, or null. The number may exceed MAX_ZONE_NUMBER (then no zone has it). */
export const zoneNumberOfSlug = (slug: string): number | null => (SLUG.test(slug) ? Number(slug.slice(5)) : null)

export const isKnowableZoneNumber = (zoneNumber: number) =>
  Number.isSafeInteger(zoneNumber) && zoneNumber >= 1 && zoneNumber <= MAX_ZONE_NUMBER

/**
 * Every spelling of a zone a request may carry (path, query, body): the name `Zona N` or the slug
 * `zona-N`, the word in any letter case, N from 1 without leading zeros.
 */
export const ZONE_INPUT_PATTERN = `^${lettersInAnyCase('Zona')}[ -][1-9][0-9]*$`

/**
 * A zone as a request names it, in the one schema every input that names a zone uses (the path of
 * /zone/{slug}, `zone` of /listings, the `zone` of briefing bodies): any spelling of
 * ZONE_INPUT_PATTERN, read as the canonical name `Zona N`.
 */
export const ZoneInput = expecting(
  spelledAnyOf(
    Type.String({
      pattern: ZONE_NAME_PATTERN,
      description: 'zone: its name "Zona N" or its slug zona-N (N from 1, no leading zeros)',
      examples: ['zona-3', 'Zona 3'],
    }),
    ZONE_INPUT_PATTERN,
    // The pattern admits exactly `zona`, a space or a hyphen, then the number: the name keeps the number's digits.
    (text) => `Zona ${text.slice(5)}`,
  ),
  'Expected "Zona N" or zona-N, e.g. Zona 10 or zona-10',
)
