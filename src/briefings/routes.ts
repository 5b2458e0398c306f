import type { Gate } from '../http/gate.ts'
import { mountOperations } from '../http/operation.ts'
import { type BriefingDeps, createBriefings } from './create-briefing.ts'
import { listPersonas } from './list-personas.ts'

/** GET /briefings/personas, then POST /briefings/{persona} for each persona, relative to /api/v1. */
export const BRIEFING_OPERATIONS = [listPersonas, ...createBriefings]

/** The briefing operations alone behind `gate` (as the briefing route specs serve them); each briefing is `deps.service.brief(...)`. */
export const briefingRoutes = (deps: BriefingDeps & { gate: Gate }) => mountOperations('briefings', deps.gate, BRIEFING_OPERATIONS, deps)
