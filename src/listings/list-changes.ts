import type { ChangeFilter } from '../domain/listings/changes.ts'
import { changeSeen } from './change-seen.ts'
import { refusalOf } from '../http/openapi.ts'
import { defineOperation } from '../http/operation.ts'
import { answeredFrom, PROVENANCE_HEADERS } from '../http/provenance.ts'
import { decodeCursor, encodeCursor, storeIdentity } from './cursor.ts'
import { CHANGES_EXAMPLE } from './feed-examples.ts'
import { changesInputs, filterOf } from './feed-query.ts'
import { ChangesResponse } from './feed-schemas.ts'
import { type ListingFeed, type ListingFeedDeps, positionOf } from './feed-deps.ts'

async function changesAfter(feed: ListingFeed, after: string | undefined, limit: number, filter: ChangeFilter) {
  const view = await feed.changes.view()
  const from = await positionOf(feed, after, view.position)
  // One more than asked: whether more are there already.
  const rows = from >= view.position ? [] : await feed.changes.page(view, from, limit + 1, filter)
  const more = rows.length > limit
  const page = rows.slice(0, limit)
  const identity = await storeIdentity(feed.store)
  const changes = page.flatMap((row) => changeSeen(row, encodeCursor(identity, row.position), filter) ?? [])
  const next = more ? page.at(-1)!.position : Math.max(from, view.position)
  return { answer: { changes, next_cursor: encodeCursor(identity, next), more }, view }
}

/** GET /listings/changes: what happened to the public inventory after a cursor, in log order (docs/api.md, "Staying in sync"). */
export const listChanges = defineOperation({
  method: 'GET',
  path: '/listings/changes',
  access: 'read',
  operationId: 'listListingChanges',
  tag: 'Sync',
  summary: 'What changed in the verified broker inventory after a cursor: listed, updated, price changed, removed',
  description:
    'The changes to the public listings (active, verified, broker) after `after`, in the order they were recorded, each with its ' +
    'cursor and the listing as it is after it. Applied in order to an export taken at that cursor (GET /listings/export), they give ' +
    'exactly the current inventory: no gap, no duplicate. Follow `next_cursor` while `more` is true; when it is false you are ' +
    'caught up. Cursors are the event log\'s positions: stable across restarts and rebuilds, refused (400 invalid_cursor) when ' +
    'they are not a cursor of this store. With `country` (and `zone`), a listing that moves out is `removed` (reason `moved_out`) ' +
    'and one that moves in is `listed`.',
  inputs: changesInputs,
  ok: ChangesResponse,
  okExample: CHANGES_EXAMPLE,
  okHeaders: PROVENANCE_HEADERS,
  errors: [refusalOf(() => changesInputs.read('?limit=0&zone=zona-3')), refusalOf(() => decodeCursor(encodeCursor('5fff63f8de7406b0', 4531), '0f5c3d9e4b2a1f78'))],
  handler: (deps: ListingFeedDeps) => async ({ set, query }) => {
    const { answer, view } = await changesAfter(deps.feed, query.after, query.limit, filterOf(query))
    deps.feed.metrics.changesServed(answer.changes.length)
    answeredFrom(set, view)
    return { ok: true as const, ...answer }
  },
})
