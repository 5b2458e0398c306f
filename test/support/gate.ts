import { type Gate, gate } from '../../src/http/gate.ts'
import { formatApiKey, hashApiKey } from '../../src/domain/keys/api-key.ts'
import type { KeyLookup } from '../../src/http/authenticate.ts'
import { memoryRateLimiter } from '../../src/ratelimit/memory.ts'
import { defaultRateLimits } from '../../src/ratelimit/port.ts'
import { systemClock } from '../../src/shared/random.ts'

/**
 * The real gate over a one-key lookup (an admin key with both scopes, so nothing is counted), for
 * suites that test a feature's routes rather than authentication: requests send `authorization`.
 */
export function adminGate(): { gate: Gate; authorization: string } {
  const key = formatApiKey('RouteSuiteAdminKey00000000000000')
  const lookup: KeyLookup = {
    key: (hash) => (hash === hashApiKey(key) ? { keyId: 'key_routesuite0', ownerId: 'route-suite', scopes: ['read', 'write'], status: 'active', expiresAt: null } : undefined),
    owner: (id) => (id === 'route-suite' ? { tier: 'admin', status: 'active' } : undefined),
  }
  return {
    // Route suites send no HEAD, the only request whose answer names the path's methods.
    gate: gate({ keys: lookup, limiter: memoryRateLimiter(), limits: defaultRateLimits, clock: systemClock, allow: () => 'GET' }),
    authorization: `Bearer ${key}`,
  }
}
