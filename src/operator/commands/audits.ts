import type { TrailLine } from '../../audit/trail.ts'
import { pairs, table } from '../text.ts'
import { until } from './params.ts'

/** What the audit trails of keys and owners share: `--until`, and their table of events. */

export const untilState = until('the state as of this time (events after it are left out)')

export const trailTable = (lines: readonly TrailLine<object>[]) =>
  table(
    lines.map((l) => ({ ...l, details: pairs(l.details), state: pairs(l.state as Record<string, unknown>) })),
    ['position', 'at', 'type', 'actor', 'state', 'details'],
  )
