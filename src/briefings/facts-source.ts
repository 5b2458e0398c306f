import type { ListingInventory } from '../../projections/listings/inventory.ts'
import type { ReadyZones } from '../../projections/listings/ready-zones.ts'
import { countryContext, estimateSubjectOf, type ZoneFactsSource } from '../domain/briefings/facts.ts'
import { zoneNumberOfName, zoneSlug } from '../domain/market/zone-name.ts'

/**
 * The facts GET /zone/{slug} and GET /zones serve, from the same prepared answers, and the estimate
 * GET /estimate would answer now, from the same public listings in memory (the inventory).
 */
export function zoneFactsFrom(ready: Pick<ReadyZones, 'zone' | 'zones'>, inventory: Pick<ListingInventory, 'estimate'>): ZoneFactsSource {
  return {
    async zone(country, zone, now) {
      const number = zoneNumberOfName(zone)
      return number === null ? null : ready.zone(country, zoneSlug(number), now)
    },
    country: async (country, now) => countryContext(country, await ready.zones(country, now)),
    async estimate(country, zone, subject) {
      // The zone was resolved first (step 3 of the pipeline): its name is `Zona N`.
      const estimate = await inventory.estimate(country, zoneNumberOfName(zone)!, subject.operation, subject.property_type, estimateSubjectOf(subject))
      return { subject, ...estimate }
    },
  }
}
