import { PersonaCatalogue, personaCatalogue } from '../domain/briefings/personas/index.ts'
import { defineOperation } from '../http/operation.ts'

const CATALOGUE = personaCatalogue()

/** GET /briefings/personas: the personas, their input schemas and verdicts (the same answer for every caller). */
export const listPersonas = defineOperation({
  method: 'GET',
  path: '/briefings/personas',
  access: 'read',
  operationId: 'listPersonas',
  tag: 'Briefings',
  summary: 'The five personas, each with its input JSON Schema and verdict vocabulary',
  description: 'Each persona’s id, name, description, the JSON Schema of its briefing input (every spelling the server accepts, as in the request bodies of this document) and its verdicts.',
  ok: PersonaCatalogue,
  okExample: CATALOGUE,
  errors: [],
  handler: () => () => CATALOGUE,
})
