import type { TSchema } from '@sinclair/typebox'
import { ByteWriter, ParquetWriter } from 'hyparquet-writer'
import { LISTING_RECORD, type RecordEntry } from '../domain/listings/fields.ts'

/**
 * The formats of GET /listings/export, each written a chunk of records at a time (constant memory
 * whatever the size). A record is the /listings record without `days_on_market` (it depends on the
 * day it is read: recompute it from `listed_at`). NDJSON carries the record as it is; CSV and
 * Parquet flatten it into the columns of `EXPORT_COLUMNS` (`broker` becomes `broker_id` and
 * `broker_name`). Parquet is written by hyparquet-writer (pure JavaScript, the same on Bun, Node and
 * Deno, no native build; docs/api.md "Staying in sync" says why).
 */
export const EXPORT_FORMATS = ['ndjson', 'csv', 'parquet'] as const
export type ExportFormat = (typeof EXPORT_FORMATS)[number]

export type ExportRecord = Record<string, unknown>

/** One column of the flat formats: its name, Parquet type, and its value in a record. */
type ExportColumn = { name: string; type: 'STRING' | 'INT32' | 'DOUBLE' | 'TIMESTAMP'; nullable: boolean; of: (record: ExportRecord) => unknown }

const schemaType = (schema: TSchema): string | undefined =>
  schema.type ?? (schema.anyOf as TSchema[] | undefined)?.find((member) => member.type !== 'null')?.type
const nullable = (schema: TSchema) => Boolean((schema.anyOf as TSchema[] | undefined)?.some((member) => member.type === 'null'))

/** The record's fields that do not depend on the time of the request, in the record's order. */
export const EXPORTED_FIELDS = Object.entries(LISTING_RECORD as Record<string, RecordEntry>).filter(([, entry]) => !entry.perRequest)

/** The columns of CSV and Parquet, from the record's declaration (src/domain/listings/fields.ts). */
export const EXPORT_COLUMNS: readonly ExportColumn[] = EXPORTED_FIELDS.flatMap(([name, entry]): ExportColumn[] => {
  const type = schemaType(entry.schema)
  if (type === 'object') {
    return Object.keys(entry.schema.properties as object).map((sub) => ({
      name: `${name}_${sub}`,
      type: 'STRING',
      nullable: true,
      of: (record) => (record[name] as Record<string, unknown> | null)?.[sub] ?? null,
    }))
  }
  const kind = entry.columns[0]?.kind
  const parquet = kind === 'time' ? 'TIMESTAMP' : type === 'integer' ? 'INT32' : type === 'number' ? 'DOUBLE' : 'STRING'
  return [{ name, type: parquet, nullable: nullable(entry.schema), of: (record) => record[name] ?? null }]
})

/** A format's writer: bytes to start with, bytes for each chunk of records, bytes to end with (given the cursor and the count). */
export type ExportWriter = {
  contentType: string
  start(): Uint8Array
  chunk(records: readonly ExportRecord[]): Promise<Uint8Array>
  end(cursor: string, count: number): Promise<Uint8Array>
}

const encoder = new TextEncoder()

function ndjson(): ExportWriter {
  return {
    contentType: 'application/x-ndjson',
    start: () => new Uint8Array(0),
    chunk: async (records) => encoder.encode(records.map((record) => `${JSON.stringify(record)}\n`).join('')),
    // The last line is the only one without an `id`: the cursor to follow the changes from.
    end: async (cursor, count) => encoder.encode(`${JSON.stringify({ cursor, count })}\n`),
  }
}

/** A CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break; null is empty. */
function csvField(value: unknown): string {
  if (value === null || value === undefined) return ''
  const text = String(value)
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text
}

function csv(): ExportWriter {
  const line = (values: readonly unknown[]) => `${values.map(csvField).join(',')}\r\n`
  return {
    contentType: 'text/csv; charset=utf-8; header=present',
    start: () => encoder.encode(line(EXPORT_COLUMNS.map((c) => c.name))),
    chunk: async (records) => encoder.encode(records.map((record) => line(EXPORT_COLUMNS.map((c) => c.of(record)))).join('')),
    // CSV has no place for the cursor after the rows: it is the Mirador-Cursor header.
    end: async () => new Uint8Array(0),
  }
}

const PARQUET_TYPES = {
  STRING: { type: 'BYTE_ARRAY', converted_type: 'UTF8' },
  INT32: { type: 'INT32' },
  DOUBLE: { type: 'DOUBLE' },
  TIMESTAMP: { type: 'INT64', converted_type: 'TIMESTAMP_MILLIS' },
} as const

/** Bytes the Parquet writer produced since last taken (it keeps counting offsets; only its buffer is emptied). */
function taken(writer: ByteWriter): Uint8Array {
  const bytes = writer.getBytes().slice()
  writer.index = 0
  return bytes
}

/** Parquet: one row group per chunk; the cursor and the count in the file's key-value metadata (`mirador.cursor`, `mirador.count`). */
function parquet(cursor: string): ExportWriter {
  const writer = new ByteWriter()
  let file: ParquetWriter | null = null
  const open = (kvMetadata: { key: string; value: string }[]) => {
    const schema = [
      { name: 'root', num_children: EXPORT_COLUMNS.length },
      ...EXPORT_COLUMNS.map((c) => ({ name: c.name, ...PARQUET_TYPES[c.type], repetition_type: c.nullable ? 'OPTIONAL' : 'REQUIRED' })),
    ]
    return new ParquetWriter({ writer, schema: schema as never, kvMetadata, createdBy: 'mirador' })
  }
  const columnData = (records: readonly ExportRecord[]) =>
    EXPORT_COLUMNS.map((c) => ({
      name: c.name,
      data: records.map((record) => {
        const value = c.of(record)
        return c.type === 'TIMESTAMP' && value !== null ? new Date(String(value)) : value
      }),
    }))
  return {
    contentType: 'application/vnd.apache.parquet',
    start: () => {
      file = open([{ key: 'mirador.cursor', value: cursor }])
      return taken(writer)
    },
    chunk: async (records) => {
      if (records.length > 0) await file!.write({ columnData: columnData(records) as never, rowGroupSize: records.length })
      return taken(writer)
    },
    // The metadata is the file's footer, written last: the count can still join it.
    end: async (_cursor, count) => {
      file!.kvMetadata!.push({ key: 'mirador.count', value: String(count) })
      await file!.finish()
      return taken(writer)
    },
  }
}

/** A writer of `format`, for an export at `cursor`. */
export function exportWriter(format: ExportFormat, cursor: string): ExportWriter {
  switch (format) {
    case 'ndjson':
      return ndjson()
    case 'csv':
      return csv()
    case 'parquet':
      return parquet(cursor)
    default: {
      const never: never = format
      throw new Error(`unknown format ${String(never)}`)
    }
  }
}
