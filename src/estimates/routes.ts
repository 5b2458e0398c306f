import type { Gate } from '../http/gate.ts'
import { mountOperations } from '../http/operation.ts'
import { type EstimateDeps, getEstimate } from './get-estimate.ts'

export const ESTIMATE_OPERATIONS = [getEstimate]

/** GET /estimate alone behind `gate`, relative to the API prefix (as the estimate specs serve it). */
export const estimateRoutes = (deps: EstimateDeps & { gate: Gate }) => mountOperations('estimates', deps.gate, ESTIMATE_OPERATIONS, deps)
