import { COUNTRIES } from '../domain/market/vocabulary.ts'
import { anyCaseOf, defaulted } from '../shared/input-schema.ts'

/** The `country` query parameter of the market endpoints: one of the eight codes, any letter case, GT when absent. */
export const CountryParameter = defaulted(anyCaseOf(COUNTRIES, { description: 'country code; GT when absent' }), 'GT')
