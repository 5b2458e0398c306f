import { apiKeysProjection } from './api-keys.ts'
import { briefingCacheProjection } from './briefing-cache.ts'
import { briefingUsageProjection } from './briefing-usage.ts'
import { listingsProjection } from './listings.ts'
import { ownersProjection } from './owners.ts'
import type { Projection } from './projection.ts'

/** Every read model the system maintains, in the order they are caught up. */
export const allProjections: readonly Projection[] = [
  ownersProjection,
  apiKeysProjection,
  listingsProjection,
  briefingCacheProjection,
  briefingUsageProjection,
]
