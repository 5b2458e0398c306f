import { Type } from '@sinclair/typebox'
import { expecting } from '../../shared/input-schema.ts'
import { param } from '../command.ts'

/** Parameters several commands share. */

const Actor = expecting(Type.String({ minLength: 1, maxLength: 64 }), 'Expected 1 to 64 characters')
export const KeyId = expecting(Type.String({ pattern: '^key_[0-9A-Za-z]{12}$' }), 'Expected a key id: key_ and 12 letters or digits, as key list shows it')

/** `--actor ID`: who does it, recorded with the event. */
export const actor = (help: string) => param(Actor, { placeholder: 'ID', help })
export const optionalActor = (help: string) => param(Type.Optional(Actor), { placeholder: 'ID', help })

/** `--until ISO-TIME` of the audits. */
export const until = (help: string) => param(Type.Optional(Type.String()), { placeholder: 'ISO-TIME', help })

/** `NAME`: one read model, by the name `projections status` prints. */
export const projectionName = param(Type.String(), { placeholder: 'NAME', help: ({ projections }) => projections.join(', '), positional: true })
