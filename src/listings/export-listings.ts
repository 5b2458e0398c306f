import { Type } from '@sinclair/typebox'
import { negotiatedCoding } from '../http/encoding.ts'
import { defineOperation } from '../http/operation.ts'
import { answeredFrom, PROVENANCE_HEADERS } from '../http/provenance.ts'
import { refusalOf } from '../http/openapi.ts'
import { nextTurn } from '../runtime/dependency.ts'
import type { ChangeFilter } from '../domain/listings/changes.ts'
import type { ChangeRow, FeedView } from '../../projections/listings/change-feed.ts'
import { recordOf } from '../../projections/listings/search.ts'
import { encodeCursor, storeIdentity } from './cursor.ts'
import { EXPORT_NDJSON_EXAMPLE } from './feed-examples.ts'
import { EXPORT_COLUMNS, type ExportFormat, exportWriter } from './export-formats.ts'
import { ExportedListing } from './feed-schemas.ts'
import { exportInputs, filterOf } from './feed-query.ts'
import type { ListingFeed, ListingFeedDeps } from './feed-deps.ts'

const EXTENSIONS: Record<ExportFormat, string> = { ndjson: 'ndjson', csv: 'csv', parquet: 'parquet' }
/**
 * Listings read before the headers are sent. A chunk of 2,000 read there from a cold cache took more
 * than the request's 1.5 s budget at 1M listings beside load (a 503 instead of an export): a tenth of it
 * answers in a tenth of the time.
 */
const FIRST_CHUNK = 200

/**
 * Listings between two full garbage collections during an export (on Bun; Node and Deno have no such
 * call: src/runtime/edge.ts). An export makes garbage at ~20 MB/s (rows, records, encoded chunks) while
 * the server holds a large live heap (the in-memory inventory), and Bun let the heap grow by 227–389 MiB
 * before collecting it at 1M listings. Collected every 8,000 listings: +28–83 MiB in every format (every
 * 16,000 left Parquet at +126–135), for a stop of 35–90 ms each, about 87 per export of 700,000 (decision 0121).
 */
const COLLECT_EVERY = 8_000

/**
 * The export's body: the format's start, a chunk of records per chunk of the snapshot as the client
 * reads, the format's end with the cursor; reported to the metrics when it ends. While the client
 * takes one chunk the next is being read from the database (one chunk ahead, never more: memory
 * stays constant however slow the client, and the database's time overlaps the encoding's and the
 * client's). Each chunk is a turn of its own with the request's whole time budget
 * (runtime/dependency.ts): the budget bounds a chunk's reads, not the export, which takes as long
 * as the client reads.
 */
function exportBody(feed: ListingFeed, format: ExportFormat, cursor: string, first: ChangeRow[] | null, rest: AsyncGenerator<ChangeRow[]>) {
  const writer = exportWriter(format, cursor)
  const started = performance.now()
  let [listings, bytes, ended] = [0, 0, false]
  const report = (completed: boolean) => {
    if (ended) return
    ended = true
    feed.metrics.exported({ format, completed, listings, bytes, seconds: (performance.now() - started) / 1000 })
  }
  let pending = first
  /** The chunk after the one being sent, being read meanwhile. */
  let ahead: Promise<IteratorResult<ChangeRow[]>> | null = null
  const readAhead = () => {
    ahead = rest.next()
    // Awaited by the next pull; a client gone before it leaves its failure to nobody.
    ahead.catch(() => {})
  }
  const body = new ReadableStream<Uint8Array>({
    start: (controller) => controller.enqueue(writer.start()),
    async pull(controller) {
      try {
        nextTurn()
        const rows = pending ?? (await (ahead ?? rest.next())).value ?? null
        pending = null
        if (rows === null) {
          controller.enqueue(await writer.end(cursor, listings))
          return controller.close()
        }
        readAhead()
        listings += rows.length
        controller.enqueue(await writer.chunk(rows.map((row: ChangeRow) => recordOf(row.row))))
        if (listings % COLLECT_EVERY < rows.length) feed.collectGarbage()
      } catch (error) {
        // Headers are gone: the body stops short (NDJSON without its cursor line, Parquet without its footer).
        report(false)
        controller.error(error)
      }
    },
    async cancel() {
      report(false)
      await rest.return(undefined)
    },
  })
  // Last on the way out (after compression): what was sent, and the end of it, are known here.
  const counted = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      bytes += chunk.byteLength
      controller.enqueue(chunk)
    },
    flush: () => report(true),
  })
  return { body, counted }
}

/** Whether the export goes in gzip, the one coding it is streamed in (`br, gzip;q=0` and `br, *;q=0` refuse it; `*` accepts it). */
const gzipAccepted = (header: string | null): boolean => negotiatedCoding(header, ['gzip']) === 'gzip'

/** The name a downloaded export is saved under: what, where and at which cursor. */
const fileName = (filter: ChangeFilter, view: FeedView, format: ExportFormat) =>
  `mirador-listings-${filter.country ?? 'all'}${filter.zone === null ? '' : `-zona-${filter.zone}`}-${view.position}.${EXTENSIONS[format]}`

/** GET /listings/export: every public listing as of one position of the log, streamed (docs/api.md, "Staying in sync"). */
export const exportListings = defineOperation({
  method: 'GET',
  path: '/listings/export',
  access: 'read',
  operationId: 'exportListings',
  tag: 'Sync',
  summary: 'The whole verified broker inventory as of one cursor, streamed as NDJSON, CSV or Parquet',
  description:
    'Every public listing (active, verified, broker) of a country, a zone or all, as of one position of the event log, streamed ' +
    'in id order whatever the size; counted as one request. The position is the `Mirador-Cursor` header (and, in NDJSON, the ' +
    'last line `{"cursor", "count"}`, the only line without an `id`; in Parquet, the key-value metadata `mirador.cursor` and ' +
    '`mirador.count`): follow GET /listings/changes from it. gzip when the client accepts it.',
  inputs: exportInputs,
  ok: ExportedListing,
  okExample: JSON.parse(EXPORT_NDJSON_EXAMPLE.split('\n')[0]!),
  okMedia: {
    'application/x-ndjson': { schema: Type.String({ description: 'one listing (ExportedListing) a line, then `{"cursor", "count"}`' }), example: EXPORT_NDJSON_EXAMPLE },
    'text/csv': { schema: Type.String({ description: `a header line, then one listing a line: ${EXPORT_COLUMNS.map((c) => c.name).join(', ')}` }) },
    'application/vnd.apache.parquet': { schema: Type.String({ format: 'binary', description: 'one row group per chunk; the columns of text/csv' }) },
  },
  okHeaders: {
    'Mirador-Cursor': 'the position the export is as of: pass it as `after` to GET /listings/changes',
    'Content-Disposition': 'attachment, with a file name naming the place and the position',
    ...PROVENANCE_HEADERS,
  },
  errors: [refusalOf(() => exportInputs.read('?format=xlsx&zone=zona-3'))],
  handler: (deps: ListingFeedDeps) => async ({ request, set, query }) => {
    const filter = filterOf(query)
    const view = await deps.feed.changes.view()
    const cursor = encodeCursor(await storeIdentity(deps.feed.store), view.position)
    answeredFrom(set, view)
    // A small first chunk: it is read before the headers, within the request's budget, and is the client's first bytes.
    const chunks = deps.feed.changes.snapshot(view, filter, deps.feed.exportChunk, Math.min(FIRST_CHUNK, deps.feed.exportChunk))
    // The first chunk before the headers: a database that cannot answer is a JSON error, not a cut body.
    const first = (await chunks.next()).value ?? []
    const { body, counted } = exportBody(deps.feed, query.format, cursor, first, chunks)
    const gzip = gzipAccepted(request.headers.get('accept-encoding'))
    const headers: Record<string, string> = {
      ...(set.headers as Record<string, string>),
      'content-type': exportWriter(query.format, cursor).contentType,
      'content-disposition': `attachment; filename="${fileName(filter, view, query.format)}"`,
      'mirador-cursor': cursor,
      vary: 'Accept-Encoding',
    }
    if (gzip) headers['content-encoding'] = 'gzip'
    const sent = gzip ? body.pipeThrough(new CompressionStream('gzip') as unknown as TransformStream<Uint8Array, Uint8Array>) : body
    return new Response(sent.pipeThrough(counted), { status: 200, headers })
  },
})
