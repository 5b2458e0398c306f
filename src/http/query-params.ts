import { Type } from '@sinclair/typebox'
import { type FieldError, invalidRequest } from '../shared/errors.ts'
import { COUNTRIES, Country, countryFrom } from '../domain/market/vocabulary.ts'

/**
 * Reading query parameters (always strings on the wire) into typed values, collecting one
 * message per bad field so that a 400 names every problem at once. Each reader returns the
 * fallback after recording an error, so parsing continues.
 */
export type RawQuery = Readonly<Record<string, string | undefined>>
export type Problems = FieldError[]

/** The `country` query parameter as documented: one of the eight codes, any letter case, GT when absent. */
export const CountryParameter = Type.Optional(
  Type.Union(Country.anyOf, { description: 'country code, in any letter case; GT when absent', default: 'GT', examples: ['CR'] }),
)

export function countryParam(raw: RawQuery, problems: Problems): Country {
  const text = raw.country
  if (text === undefined) return 'GT'
  const country = countryFrom(text)
  if (country === null) problems.push({ field: 'country', message: `must be one of ${COUNTRIES.join(', ')} (any letter case)` })
  return country ?? 'GT'
}

/** One of `values`, matched in any letter case and returned as spelled in `values`. */
export function choiceParam<T extends string>(raw: RawQuery, field: string, values: readonly T[], problems: Problems): T | null {
  const text = raw[field]
  if (text === undefined) return null
  const match = values.find((v) => v.toLowerCase() === text.trim().toLowerCase())
  if (match === undefined) problems.push({ field, message: `must be one of ${values.join(', ')}` })
  return match ?? null
}

export function integerParam(
  raw: RawQuery,
  field: string,
  range: { min: number; max: number; fallback: number },
  problems: Problems,
): number {
  const text = raw[field]
  if (text === undefined) return range.fallback
  const value = /^\s*[0-9]{1,9}\s*$/.test(text) ? Number(text) : Number.NaN
  if (!(value >= range.min && value <= range.max)) {
    problems.push({ field, message: `must be an integer from ${range.min} to ${range.max}` })
    return range.fallback
  }
  return value
}

/** A non-negative decimal number such as 150000 or 1999.99. */
export function amountParam(raw: RawQuery, field: string, problems: Problems): number | null {
  const text = raw[field]
  if (text === undefined) return null
  if (!/^\s*[0-9]{1,15}(\.[0-9]{1,6})?\s*$/.test(text)) {
    problems.push({ field, message: 'must be a non-negative number, e.g. 150000 or 1999.99' })
    return null
  }
  return Number(text)
}

export function throwIfProblems(problems: Problems, what: string): void {
  if (problems.length > 0) {
    throw invalidRequest(`invalid ${what}: ${problems.map((p) => `${p.field}: ${p.message}`).join('; ')}`, problems)
  }
}
