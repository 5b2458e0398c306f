import type { Static } from '@sinclair/typebox'
import type { EstimateResponse } from '../domain/market/estimate-figures.ts'

/** GET /estimate?zone=zona-10&operation=Venta&property_type=Casa&area_m2=250&bedrooms=3&comparables=5 on the demo market. */
export const ESTIMATE_EXAMPLE = {
  ok: true,
  country: 'GT',
  zone: 'Zona 10',
  slug: 'zona-10',
  operation: 'Venta',
  property_type: 'Casa',
  area_m2: 250,
  bedrooms: 3,
  bathrooms: null,
  estimate: { price_usd: 200609.85, price_per_m2_usd: 802.44, low_usd: 177053.82, high_usd: 284254.23, confidence: 'low' },
  reason: null,
  comparables: [
    { listing_id: 'lst_7e17bc93dc6c477fd8416f54', area_m2: 201, bedrooms: 3, bathrooms: 2, price_usd: 161290.32, price_per_m2_usd: 802.44, adjusted_price_usd: 200609.85, distance: 0.218156, similarity: 0.8209 },
    { listing_id: 'lst_2d130fcf29964a47593c8800', area_m2: 268, bedrooms: 2, bathrooms: 2.5, price_usd: 203000, price_per_m2_usd: 757.46, adjusted_price_usd: 189365.67, distance: 0.319526, similarity: 0.7578 },
    { listing_id: 'lst_bcced48c54eb7d99d2b05445', area_m2: 353, bedrooms: 3, bathrooms: 2, price_usd: 250000, price_per_m2_usd: 708.22, adjusted_price_usd: 177053.82, distance: 0.345007, similarity: 0.7435 },
    { listing_id: 'lst_bbb50e07f343a32f6b88ff70', area_m2: 202, bedrooms: 4, bathrooms: 4, price_usd: 229677.42, price_per_m2_usd: 1137.02, adjusted_price_usd: 284254.23, distance: 0.463193, similarity: 0.6834 },
    { listing_id: 'lst_12ad84786a74f780817bf376', area_m2: 442, bedrooms: 2, bathrooms: 2, price_usd: 415483.87, price_per_m2_usd: 940.01, adjusted_price_usd: 235002.19, distance: 0.819849, similarity: 0.5495 },
  ],
  method: { version: 1, level: 4, candidates: 6, kept: 6, used: 5, min_comparables: 5 },
} satisfies Static<typeof EstimateResponse>
