import type { Static } from '@sinclair/typebox'
import type { ZoneDetailResponse, ZoneHistoryResponse, ZonesResponse } from '../domain/market/zone-figures.ts'

/** GET /zones?country=GT on the demo market, two of its zones shown. */
export const ZONES_EXAMPLE = {
  ok: true,
  country: "GT",
  count: 2,
  zones: [{"zone": "Zona 3", "slug": "zona-3", "median_ppm2_usd": 1903.53, "n_active": 28, "n_sale": 18, "median_dom": 132, "median_price_usd": 190967.74, "change_30d_pct": 1.57, "updated_at": "2026-11-24T19:27:00.000Z"}, {"zone": "Zona 4", "slug": "zona-4", "median_ppm2_usd": 822.77, "n_active": 30, "n_sale": 24, "median_dom": 73, "median_price_usd": 96193.55, "change_30d_pct": -1.15, "updated_at": "2026-11-26T23:06:00.000Z"}],
} satisfies Static<typeof ZonesResponse>

/** GET /zone/zona-3?country=GT on the demo market. */
export const ZONE_EXAMPLE = {
  ok: true,
  zone: "Zona 3",
  slug: "zona-3",
  country: "GT",
  n_active: 28,
  n_sale: 18,
  median_ppm2_usd: 1903.53,
  median_price_usd: 190967.74,
  median_dom: 132,
  by_property_type: [{"property_type": "Apartamento", "n_active": 11, "n_sale": 7, "median_ppm2_usd": 1760.91, "median_price_usd": 202580.65}, {"property_type": "Casa", "n_active": 6, "n_sale": 4, "median_ppm2_usd": 1716.53, "median_price_usd": 218064.52}, {"property_type": "Terreno", "n_active": 2, "n_sale": 2, "median_ppm2_usd": null, "median_price_usd": null}, {"property_type": "Oficina", "n_active": 3, "n_sale": 3, "median_ppm2_usd": 2008.65, "median_price_usd": 122193.55}, {"property_type": "Local", "n_active": 6, "n_sale": 2, "median_ppm2_usd": null, "median_price_usd": null}, {"property_type": "Bodega", "n_active": 0, "n_sale": 0, "median_ppm2_usd": null, "median_price_usd": null}],
  by_bedrooms: [{"bedrooms": "0", "n_active": 14, "n_sale": 9, "median_ppm2_usd": 1874.19, "median_price_usd": 149677.42}, {"bedrooms": "1", "n_active": 3, "n_sale": 3, "median_ppm2_usd": 1957.45, "median_price_usd": 210322.58}, {"bedrooms": "2", "n_active": 2, "n_sale": 1, "median_ppm2_usd": null, "median_price_usd": null}, {"bedrooms": "3", "n_active": 5, "n_sale": 2, "median_ppm2_usd": null, "median_price_usd": null}, {"bedrooms": "4+", "n_active": 4, "n_sale": 3, "median_ppm2_usd": 1932.86, "median_price_usd": 202580.65}],
  by_operation: [{"operation": "Venta", "n_active": 18, "median_ppm2_usd": 1903.53, "median_price_usd": 190967.74}, {"operation": "Renta", "n_active": 10, "median_ppm2_usd": 11.86, "median_price_usd": 1385.97}],
  change_30d: {"median_ppm2_usd_now": 1903.53, "median_ppm2_usd_then": 1874.19, "pct": 1.57, "n_active_now": 28, "n_active_then": 28, "n_sale_now": 18, "n_sale_then": 19},
  source_mix: [{"source": "broker", "n": 23, "share": 0.8214}, {"source": "scraped", "n": 5, "share": 0.1786}],
  updated_at: "2026-11-24T19:27:00.000Z",
} satisfies Static<typeof ZoneDetailResponse>

/** GET /zone/zona-3/history?country=GT&months=2 on the demo market. */
export const ZONE_HISTORY_EXAMPLE = {
  ok: true,
  zone: "Zona 3",
  slug: "zona-3",
  country: "GT",
  as_of: "2026-11-27T15:17:43.700Z",
  months: 2,
  history: [{"month": "2026-10", "at": "2026-10-31T23:59:59.999Z", "listed": true, "n_active": 28, "n_sale": 19, "median_ppm2_usd": 1874.19, "median_price_usd": 194838.71, "median_rent_usd": 1430, "median_rent_ppm2_usd": 12.33, "median_dom": 105.3}, {"month": "2026-11", "at": "2026-11-27T15:17:43.700Z", "listed": true, "n_active": 28, "n_sale": 18, "median_ppm2_usd": 1903.53, "median_price_usd": 190967.74, "median_rent_usd": 1385.97, "median_rent_ppm2_usd": 11.86, "median_dom": 132}],
} satisfies Static<typeof ZoneHistoryResponse>
