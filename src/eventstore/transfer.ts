/**
 * Moving the log between stores (`events export` / `events import`): the file format and the
 * import's rules. The format is documented in docs/events-file.md.
 *
 *   {"format":"mirador-events","version":1,"exported_at":"…"}          first line
 *   {"position":1,"stream":"owner-acme","revision":0,"type":"…","id":"…","recordedAt":"…","data":{…},"metadata":{}}
 *   …                                                                  one line per event, in log order
 *   {"end":true,"events":N}                                            last line: the file is whole
 */
import { Type } from '@sinclair/typebox'
import { fail, invalidRequest } from '../shared/errors.ts'
import { isValid, parseWith } from '../shared/validate.ts'
import { canonical } from './chain.ts'
import type { EventStore, RecordedEvent } from './port.ts'

export const FORMAT = 'mirador-events'
export const VERSION = 1

const Header = Type.Object(
  { format: Type.Literal(FORMAT), version: Type.Literal(VERSION), exported_at: Type.String() },
  { additionalProperties: false },
)
const Trailer = Type.Object({ end: Type.Literal(true), events: Type.Integer({ minimum: 0 }) }, { additionalProperties: false })
const UUID = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'
const UTC_TIME = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,9})?Z$'
const EventLine = Type.Object(
  {
    position: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
    stream: Type.String({ minLength: 1 }),
    revision: Type.Integer({ minimum: 0 }),
    type: Type.String({ minLength: 1 }),
    id: Type.String({ pattern: UUID }),
    recordedAt: Type.String({ pattern: UTC_TIME }),
    data: Type.Record(Type.String(), Type.Unknown()),
    metadata: Type.Record(Type.String(), Type.Unknown()),
  },
  { additionalProperties: false },
)

export const headerLine = (exportedAt: Date) => JSON.stringify({ format: FORMAT, version: VERSION, exported_at: exportedAt.toISOString() })

export const trailerLine = (events: number) => JSON.stringify({ end: true, events })

/** One event as a line, its fields always in the same order. */
export const eventLine = (e: RecordedEvent) =>
  JSON.stringify({
    position: e.position,
    stream: e.stream,
    revision: e.revision,
    type: e.type,
    id: e.id,
    recordedAt: e.recordedAt,
    data: e.data,
    metadata: e.metadata,
  })

export type FileLine = { kind: 'header' } | { kind: 'event'; event: RecordedEvent } | { kind: 'end'; events: number }

/** Reads one line of an export file, or throws `invalid_request` naming the line. */
export function parseLine(text: string, lineNo: number): FileLine {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw invalidRequest(`line ${lineNo}: not JSON`)
  }
  if (isValid(Header, value)) return { kind: 'header' }
  if (isValid(Trailer, value)) return { kind: 'end', events: value.events }
  if (value && typeof value === 'object' && 'format' in value) {
    throw invalidRequest(`line ${lineNo}: not a ${FORMAT} version ${VERSION} file`)
  }
  const line = parseWith(EventLine, value, `event on line ${lineNo}`)
  const recordedAt = new Date(line.recordedAt)
  if (Number.isNaN(recordedAt.getTime())) throw invalidRequest(`line ${lineNo}: recordedAt is not a time`)
  return { kind: 'event', event: { ...line, id: line.id.toLowerCase(), recordedAt: recordedAt.toISOString() } }
}

/** The same recorded event in two stores: everything but the position, which each store assigns. */
export const sameEvent = (a: RecordedEvent, b: RecordedEvent): boolean =>
  a.id.toLowerCase() === b.id.toLowerCase() &&
  a.stream === b.stream &&
  a.revision === b.revision &&
  a.type === b.type &&
  a.recordedAt === b.recordedAt &&
  canonical(a.data) === canonical(b.data) &&
  canonical(a.metadata) === canonical(b.metadata)

const describe = (e: RecordedEvent) => `${e.type} ${e.id} in ${e.stream} at revision ${e.revision}`

export type ImportStep = {
  /** The target's position of the last event compared or imported: where the next batch continues. */
  after: number
  /** Events the target already held (a previous run of the same import). */
  present: number
  imported: number
}

/**
 * Imports the next events of a file into `store`, whose log up to `after` matched the file so far.
 * The target must hold a prefix of the file: events it already holds are compared and skipped
 * (a re-run, or one that was interrupted, goes on where it stopped), the rest are recorded after
 * its last event. A different event anywhere refuses the import before anything is written.
 */
export async function importBatch(store: EventStore, events: readonly RecordedEvent[], firstLine: number, after: number): Promise<ImportStep> {
  for (let i = 1; i < events.length; i++) {
    if (events[i]!.position <= events[i - 1]!.position) throw invalidRequest(`line ${firstLine + i}: positions must grow from line to line`)
  }
  const held = await store.readAll(after, { limit: events.length })
  held.forEach((existing, i) => {
    if (!sameEvent(existing, events[i]!)) {
      throw fail.conflict(
        `line ${firstLine + i}: the store holds a different event here (${describe(existing)}, file: ${describe(events[i]!)}); ` +
          'import into an empty store, or one holding an earlier part of the same file',
      )
    }
  })
  const rest = events.slice(held.length)
  const last = held.at(-1)?.position ?? after
  if (rest.length === 0) return { after: last, present: held.length, imported: 0 }
  await store.importEvents(rest)
  // What the store now holds after `last` must be exactly what was imported: nobody wrote in between.
  const written = await store.readAll(last, { limit: rest.length })
  const intruder = written.findIndex((e, i) => !sameEvent(e, rest[i]!))
  if (written.length < rest.length || intruder >= 0) {
    throw fail.conflict(`line ${firstLine + held.length}: another writer appended to the store during the import; import into a store nobody else writes to`)
  }
  return { after: written.at(-1)!.position, present: held.length, imported: rest.length }
}
