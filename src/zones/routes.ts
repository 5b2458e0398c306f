import { mountOperations } from '../http/operation.ts'
import { getZone } from './get-zone.ts'
import { getZoneHistory } from './get-zone-history.ts'
import type { ZoneRouteDeps } from './inputs.ts'
import { listZones } from './list-zones.ts'

/** GET /zones, GET /zone/:slug and GET /zone/:slug/history, in this order (the document's). */
export const ZONE_OPERATIONS = [listZones, getZone, getZoneHistory]

/** The zone operations alone behind `gate`, relative to the API prefix (the audit and the zone specs serve them so). */
export const zoneRoutes = (deps: ZoneRouteDeps) => mountOperations('zones', deps.gate, ZONE_OPERATIONS, deps)
