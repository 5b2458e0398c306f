import { type BriefingGenerated, isBriefingEvent } from '../../src/domain/briefings/events.ts'
import type { RecordedEvent } from '../../src/eventstore/port.ts'
import type { RowChange, Tables } from '../engine/projection.ts'

/**
 * The `apply` of a briefing read model: both follow the quota streams and change on a charge (a
 * generated briefing) only; a free cache hit changes neither.
 */
export function onCharge<K extends string>(apply: (charge: BriefingGenerated, event: RecordedEvent, t: Tables<K>) => RowChange[]) {
  return (event: RecordedEvent, t: Tables<K>): RowChange[] => {
    const domain = { type: event.type, data: event.data }
    if (!isBriefingEvent(domain)) return []
    switch (domain.type) {
      case 'BriefingGenerated':
        return apply(domain.data, event, t)
      case 'BriefingServedFromCache':
        return []
      default: {
        const never: never = domain
        throw new Error(`unhandled ${JSON.stringify(never)}`)
      }
    }
  }
}
