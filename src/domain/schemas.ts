import { Type } from '@sinclair/typebox'

/** Who did it, as events record it: an owner id, `operator`, or a person's name. */
export const Actor = Type.String({ minLength: 1, maxLength: 64 })
/** When it was decided: an ISO 8601 time in UTC, from the deciding shell's clock. */
export const At = Type.String({ format: 'date-time' })
/** A UTC calendar month, `YYYY-MM`: the quota's period. */
export const Month = Type.String({ pattern: '^[0-9]{4}-(0[1-9]|1[0-2])$' })
