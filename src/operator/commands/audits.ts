import type { TrailLine } from '../../audit/trail.ts'
import { pairs, table } from '../text.ts'
import { until } from './params.ts'

/** What the audit trails of keys and owners share: `--until`, and their table of events. */

export const untilState = until('the state as of this time (events after it are left out)')

export const trailTable = (lines: readonly TrailLine<object>[]) =>
  table(
    // What a state does not have (no roll: no successor, no grace end) is left out.
    lines.map((l) => ({ ...l, details: pairs(l.details), state: pairs(Object.fromEntries(Object.entries(l.state).filter(([, v]) => v !== null))) })),
    ['position', 'at', 'type', 'actor', 'state', 'details'],
  )
