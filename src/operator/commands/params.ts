import { Type } from '@sinclair/typebox'
import { param } from '../command.ts'

/** Parameters several commands share. */

const Actor = Type.String({ minLength: 1, maxLength: 64 })
export const KeyId = Type.String({ pattern: '^key_[0-9A-Za-z]{12}$' })

/** `--actor ID`: who does it, recorded with the event. */
export const actor = (help: string) => param(Actor, { placeholder: 'ID', help })
export const optionalActor = (help: string) => param(Type.Optional(Actor), { placeholder: 'ID', help })

/** `--until ISO-TIME` of the audits. */
export const until = (help: string) => param(Type.Optional(Type.String()), { placeholder: 'ISO-TIME', help })

/** `NAME`: one read model, by the name `projections status` prints. */
export const projectionName = param(Type.String(), { placeholder: 'NAME', help: ({ projections }) => projections.join(', '), positional: true })
