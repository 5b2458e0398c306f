/**
 * A listing an estimate may compare a property with (src/domain/market/estimate.ts): one public
 * listing (active, verified, broker) as it stood at the instant asked about, with the figures an
 * estimate reads. The inventory (now) and the history (as of a past instant) both hand them over.
 */
export type ComparableListing = {
  id: string
  /** The area as the feed wrote it (a double; its shortest decimal is the written one). */
  areaM2: number
  bedrooms: number
  bathrooms: number
  /** The USD price in whole cents. */
  cents: number
}
