import type { Static } from '@sinclair/typebox'
import type { ListingsResponse } from '../../projections/listings/search.ts'

/** GET /listings?country=GT&limit=1 on the demo market. */
export const LISTINGS_EXAMPLE = {
  ok: true,
  count: 1,
  total: 319,
  limit: 1,
  offset: 0,
  next_offset: 1,
  listings: [{"id": "lst_5c9bdd9b019c04e78269b6ee", "country": "GT", "zone": "Zona 8", "zone_slug": "zona-8", "operation": "Venta", "property_type": "Casa", "title": "Casa en venta, Zona 8, Ciudad de Guatemala · 4 hab.", "price_usd": 215483.87, "price_local": 1670000, "currency": "GTQ", "area_m2": 98, "price_per_m2_usd": 2198.82, "bedrooms": 4, "bathrooms": 4.5, "broker": {"id": "gt-brk-03", "name": "Grupo Hábitat"}, "verified_at": "2026-11-25T21:57:00.000Z", "listed_at": "2026-11-23T21:37:00.000Z", "days_on_market": 3, "url": "https://gt-brk-03.example/propiedades/gt-brk-03-001458"}],
} satisfies Static<typeof ListingsResponse>
