import type { Context } from 'elysia'
import type { Provenance } from '../../projections/engine/provenance.ts'

/** The header naming the log position an answer's read model reflected: every event at or below it, none above. */
const POSITION = 'Mirador-Position'
/** The header naming the read model generation an answer came from (`v6.1`, as `projections status` names it). */
const GENERATION = 'Mirador-Generation'

/**
 * What every data answer (and its 304) says it was computed from, as the OpenAPI document publishes
 * it (an operation's `okHeaders`): docs/api.md, "What an answer was computed from".
 */
export const PROVENANCE_HEADERS: Readonly<Record<string, string>> = {
  [POSITION]:
    'the log position the read model reflected when the answer was computed: every event at or below it and none above is in the data it came from ' +
    '(`audit answer --at-position` reproduces the answer from the events up to it)',
  [GENERATION]: 'the read model generation the answer came from (`v6.1`), as `projections status` names it',
}

/** The names as keys of an answer's headers (lower case, as Elysia's other headers), made once. */
const [POSITION_KEY, GENERATION_KEY] = [POSITION.toLowerCase(), GENERATION.toLowerCase()]

/** Sets the provenance headers of an answer; an answer without provenance (an audit's rebuilt read model) gets none. */
export function answeredFrom(set: Pick<Context['set'], 'headers'>, at: Provenance | undefined): void {
  if (!at) return
  set.headers[POSITION_KEY] = String(at.position)
  set.headers[GENERATION_KEY] = at.generation
}
