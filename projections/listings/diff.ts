import type { Db } from '../../src/db/port.ts'
import { toNumber } from '../../src/db/port.ts'
import { COUNTRIES } from '../../src/domain/market/vocabulary.ts'
import { LIST_LIMIT, type ProjectionDiff } from '../engine/diff.ts'
import { LISTING_COLUMNS } from './search.ts'
import { countryZoneFacts, type ListingsGeneration } from './zone-rows.ts'
import { zoneDetailAt, zonesAt } from '../../src/domain/market/zone-statistics.ts'

/**
 * `projections diff listings`: the held generation against the live one as the API would answer:
 * every zone's figures as /zones and /zone/{slug} serve them (medians, counts, breakdowns, 30-day
 * change, source mix), and the listings whose public fields (what /listings shows) differ.
 */

export type FigureChange = { country: string; zone: string; field: string; live: unknown; held: unknown }
export type ListingChange = { listing_id: string; change: 'added' | 'removed' | 'changed'; fields: Record<string, { live: unknown; held: unknown }> }

export type ListingsDiff = ProjectionDiff & {
  zones: { compared: number; changed: number; figures_changed: number; changes: FigureChange[] }
  listings: { compared_live: number; compared_held: number; changed: number; changes: ListingChange[] }
}

/** Leaves of a JSON value by path; array elements are named by their label (`by_bedrooms[4+]`). */
function leaves(value: unknown, path: string, out: Map<string, unknown>): Map<string, unknown> {
  if (Array.isArray(value)) {
    value.forEach((item, i) => {
      const label = item && typeof item === 'object' ? Object.values(item as object).find((v) => typeof v === 'string') : undefined
      leaves(item, `${path}[${label ?? i}]`, out)
    })
  } else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) leaves(v, path ? `${path}.${k}` : k, out)
  } else {
    out.set(path, value)
  }
  return out
}

export async function diffListings(
  db: Db,
  live: ListingsGeneration,
  held: ListingsGeneration,
  now: Date,
  progress: (done: number, total: number) => void,
): Promise<ListingsDiff> {
  const changes: FigureChange[] = []
  const changedZones = new Set<string>()
  let compared = 0
  for (const [i, country] of COUNTRIES.entries()) {
    const [factsA, factsB] = await Promise.all([countryZoneFacts(db, live.tables, country), countryZoneFacts(db, held.tables, country)])
    const [a, b] = [zonesAt(factsA, now), zonesAt(factsB, now)]
    const slugs = [...new Set([...a, ...b].map((z) => z.slug))]
    for (const slug of slugs) {
      compared += 1
      const [detailA, detailB] = [zoneDetailAt(factsA, slug, now), zoneDetailAt(factsB, slug, now)]
      // The /zones record, then what only /zone/{slug} adds.
      const summaryA = a.find((z) => z.slug === slug) ?? null
      const summaryB = b.find((z) => z.slug === slug) ?? null
      const pathsA = leaves({ ...detailA, ...summaryA }, '', new Map())
      const pathsB = leaves({ ...detailB, ...summaryB }, '', new Map())
      const zone = summaryA?.zone ?? summaryB!.zone
      for (const field of new Set([...pathsA.keys(), ...pathsB.keys()])) {
        const [x, y] = [pathsA.get(field) ?? null, pathsB.get(field) ?? null]
        if (JSON.stringify(x) === JSON.stringify(y)) continue
        changes.push({ country, zone, field, live: x, held: y })
        changedZones.add(`${country}/${slug}`)
      }
    }
    progress(i + 1, COUNTRIES.length + 1)
  }

  const publicFields = LISTING_COLUMNS.compared
  const listed = await db.query<{ listing_id: string; a: Record<string, unknown> | null; b: Record<string, unknown> | null; total: unknown }>(
    `with a as (select ${publicFields} from ${live.tables.listings} where public),
          b as (select ${publicFields} from ${held.tables.listings} where public)
     select listing_id, to_jsonb(a) as a, to_jsonb(b) as b, count(*) over () as total
       from a full join b using (listing_id)
      where to_jsonb(a) is distinct from to_jsonb(b)
      order by listing_id limit ${LIST_LIMIT}`,
  )
  const [counts] = await db.query<{ a: unknown; b: unknown }>(
    `select (select count(*) from ${live.tables.listings} where public) as a, (select count(*) from ${held.tables.listings} where public) as b`,
  )
  progress(COUNTRIES.length + 1, COUNTRIES.length + 1)
  const listingChanges = listed.map((r): ListingChange => {
    const fields: ListingChange['fields'] = {}
    for (const field of new Set([...Object.keys(r.a ?? {}), ...Object.keys(r.b ?? {})])) {
      if (field === 'listing_id') continue
      const [x, y] = [r.a?.[field] ?? null, r.b?.[field] ?? null]
      if (JSON.stringify(x) !== JSON.stringify(y)) fields[field] = { live: x, held: y }
    }
    return { listing_id: r.listing_id, change: r.a === null ? 'added' : r.b === null ? 'removed' : 'changed', fields }
  })
  const listingsChanged = toNumber(listed[0]?.total ?? 0)
  return {
    projection: 'listings',
    live: live.id,
    held: held.id,
    summary:
      `listings ${live.id} (live) → ${held.id} (held): ${changes.length} figure(s) differ in ${changedZones.size} of ${compared} zones; ` +
      `${listingsChanged} of ${toNumber(counts?.b ?? 0)} public listings differ`,
    zones: { compared, changed: changedZones.size, figures_changed: changes.length, changes: changes.slice(0, LIST_LIMIT) },
    listings: {
      compared_live: toNumber(counts?.a ?? 0),
      compared_held: toNumber(counts?.b ?? 0),
      changed: listingsChanged,
      changes: listingChanges,
    },
  }
}

