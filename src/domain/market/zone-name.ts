/**
 * Zones are numbered per country. The customer writes them `Zona N` (feeds, filters, briefings);
 * URLs use the slug `zona-N`. Both forms are canonical: no leading zeros, N ≥ 1.
 */
export const ZONE_NAME_PATTERN = '^Zona [1-9][0-9]*$'
export const ZONE_SLUG_PATTERN = '^zona-[1-9][0-9]*$'
/** Feeds may number zones up to here; a larger number can name no known zone. */
export const MAX_ZONE_NUMBER = 999_999

const NAME = new RegExp(ZONE_NAME_PATTERN)
const SLUG = new RegExp(ZONE_SLUG_PATTERN)

export const zoneName = (zoneNumber: number) => `Zona ${zoneNumber}`
export const zoneSlug = (zoneNumber: number) => `zona-${zoneNumber}`

/** The zone number of `Zona N` (exact spelling), or null. */
export const zoneNumberOfName = (name: string): number | null => (NAME.test(name) ? Number(name.slice(5)) : null)

/** The zone number of `zona-N`, or null. The number may exceed MAX_ZONE_NUMBER (then no zone has it). */
export const zoneNumberOfSlug = (slug: string): number | null => (SLUG.test(slug) ? Number(slug.slice(5)) : null)

export const isKnowableZoneNumber = (zoneNumber: number) =>
  Number.isSafeInteger(zoneNumber) && zoneNumber >= 1 && zoneNumber <= MAX_ZONE_NUMBER
