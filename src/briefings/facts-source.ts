import type { ReadyZones } from '../../projections/listings/ready-zones.ts'
import { countryContext, type ZoneFactsSource } from '../domain/briefings/facts.ts'
import { zoneNumberOfName, zoneSlug } from '../domain/market/zone-name.ts'

/** The facts GET /zone/{slug} and GET /zones serve, from the same prepared answers. */
export function zoneFactsFrom(ready: Pick<ReadyZones, 'zone' | 'zones'>): ZoneFactsSource {
  return {
    async zone(country, zone, now) {
      const number = zoneNumberOfName(zone)
      return number === null ? null : ready.zone(country, zoneSlug(number), now)
    },
    country: async (country, now) => countryContext(country, await ready.zones(country, now)),
  }
}
