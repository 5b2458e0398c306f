import { type Static, type TSchema, Type } from '@sinclair/typebox'
import { usdText } from '../market/fx.ts'
import { COUNTRIES, CURRENCIES, Country, Currency, OPERATIONS, Operation, PROPERTY_TYPES, PropertyType, SOURCES, Source } from '../market/vocabulary.ts'
import { zoneName, zoneNumberOfName, zoneSlug } from '../market/zone-name.ts'

/**
 * The listing record, declared once: every field a listing has, in the order of the listings
 * table and of the events (which name the fields in this order: their ids hash it). From here come
 * the feed line's schema (feed.ts), the events' details and price (listing.ts), the listings table,
 * its column lists and the rows written from events (projections/listings/rows.ts), and the
 * /listings record with its schema, hence the OpenAPI document (LISTING_RECORD below).
 * docs/architecture.md ("Add a listing field") walks through adding one.
 */

/** What a field is about; each group changes by its own event (details: ListingDetailsChanged, price: ListingPriceChanged). */
export type ListingGroup = 'identity' | 'details' | 'price' | 'state'

/** A column of the listings table. `generated`: the table computes it from other columns. */
export type Column = { name: string; type: string; nullable?: boolean; primary?: boolean; generated?: string }

/** A listing row: column name → value (timestamps as ISO strings). */
export type ListingRow = Record<string, unknown>

export type ListingField = {
  group: ListingGroup
  columns: readonly Column[]
  /** On a feed line: its name there (the field's own by default), its schema, and what to tell a person who got it wrong. */
  feed?: { name?: string; schema: TSchema; hint?: string }
  /** In the events of its group (details, price). */
  event?: TSchema
  /** The value of a feed line or an event recorded before the field existed, which lacks it. */
  absent?: unknown
  /**
   * What is answered as of a past instant depends on it (zone statistics, an estimate's comparables):
   * the history carries it, and a change of it closes the listing's history interval.
   */
  statistical?: boolean
  /** Writes its columns of `row` from the event data holding it (default: its one column, same value). */
  write?: (data: Record<string, unknown>, row: ListingRow) => void
  /** Its value from its columns (default: its one column). */
  read?: (row: ListingRow) => unknown
}

const column = (name: string, type: string, options: Partial<Column> = {}): Column => ({ name, type, ...options })
const oneOf = (words: readonly string[]) => `must be one of ${words.join(', ')}`
/** ISO 8601: a calendar date (midnight UTC) or a date-time with an explicit offset. */
const ISO_TIME = '^\\d{4}-\\d{2}-\\d{2}(T\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,9})?)?(Z|[+-]\\d{2}:?\\d{2}))?$'
const IsoTime = Type.String({ pattern: ISO_TIME, description: 'ISO 8601 time with offset, or a date' })
const ISO_HINT = 'an ISO 8601 time with offset (e.g. 2026-03-01T12:00:00Z) or a date'
const At = Type.String({ description: 'UTC ISO time' })
const Status = Type.Union([Type.Literal('active'), Type.Literal('delisted')])
export const STATUSES = Status.anyOf.map((member) => member.const)

export const Broker = Type.Object(
  { id: Type.String({ minLength: 1, maxLength: 100 }), name: Type.String({ minLength: 1, maxLength: 200 }) },
  { additionalProperties: false },
)
export type Broker = Static<typeof Broker>

const zoneNo = (zone: string): number => {
  const n = zoneNumberOfName(zone)
  if (n === null) throw new Error(`listing event with malformed zone ${JSON.stringify(zone)}`)
  return n
}

/**
 * Exact price per m² of a listing: the USD price (whole cents) over the area, in decimal with 30
 * places (correctly rounded there), far below any cent a median could be published with.
 */
export const EXACT_PPM2 = 'price_usd::numeric(46, 30) / area_m2::numeric'

export const LISTING_FIELDS = {
  listing_id: { group: 'identity', columns: [column('listing_id', 'text', { primary: true })] },
  source: { group: 'identity', columns: [column('source', 'text')], feed: { schema: Source, hint: oneOf(SOURCES) } },
  source_id: { group: 'identity', columns: [column('source_id', 'text')], feed: { schema: Type.String({ minLength: 1, maxLength: 200 }) } },
  country: {
    group: 'details',
    statistical: true,
    columns: [column('country', 'text')],
    feed: { schema: Country, hint: oneOf(COUNTRIES) },
    event: Country,
  },
  zone: {
    group: 'details',
    statistical: true,
    columns: [column('zone_no', 'integer')],
    feed: { schema: Type.String({ pattern: '^Zona [1-9][0-9]{0,5}$' }), hint: 'must be "Zona N" with N from 1 to 999999' },
    event: Type.String(),
    write: (data, row) => void (row.zone_no = zoneNo(data.zone as string)),
    read: (row) => zoneName(row.zone_no as number),
  },
  operation: {
    group: 'details',
    statistical: true,
    columns: [column('operation', 'text')],
    feed: { schema: Operation, hint: oneOf(OPERATIONS) },
    event: Operation,
  },
  property_type: {
    group: 'details',
    statistical: true,
    columns: [column('property_type', 'text')],
    feed: { schema: PropertyType, hint: oneOf(PROPERTY_TYPES) },
    event: PropertyType,
  },
  title: { group: 'details', columns: [column('title', 'text')], feed: { schema: Type.String({ minLength: 1, maxLength: 300 }) }, event: Type.String() },
  area_m2: {
    group: 'details',
    statistical: true,
    columns: [column('area_m2', 'double precision')],
    feed: { schema: Type.Number({ exclusiveMinimum: 0, maximum: 1e8 }) },
    event: Type.Number(),
  },
  bedrooms: {
    group: 'details',
    statistical: true,
    columns: [column('bedrooms', 'integer')],
    feed: { schema: Type.Integer({ minimum: 0, maximum: 100 }) },
    event: Type.Integer(),
  },
  bathrooms: {
    group: 'details',
    statistical: true,
    columns: [column('bathrooms', 'double precision')],
    feed: { schema: Type.Number({ minimum: 0, maximum: 100 }) },
    event: Type.Number(),
  },
  broker: {
    group: 'details',
    columns: [column('broker_id', 'text', { nullable: true }), column('broker_name', 'text', { nullable: true })],
    feed: { schema: Type.Optional(Type.Union([Broker, Type.Null()])), hint: 'must be null or {"id": "...", "name": "..."}' },
    event: Type.Union([Broker, Type.Null()]),
    absent: null,
    write: (data, row) => {
      const broker = data.broker as Broker | null
      row.broker_id = broker?.id ?? null
      row.broker_name = broker?.name ?? null
    },
    read: (row) => (row.broker_id === null ? null : { id: row.broker_id, name: row.broker_name }),
  },
  url: {
    group: 'details',
    columns: [column('url', 'text', { nullable: true })],
    feed: {
      schema: Type.Optional(Type.Union([Type.String({ pattern: '^https?://\\S+$', maxLength: 2000 }), Type.Null()])),
      hint: 'must be null or an http(s) URL',
    },
    event: Type.Union([Type.String(), Type.Null()]),
    absent: null,
  },
  listed_at: {
    group: 'details',
    statistical: true,
    columns: [column('listed_at', 'timestamptz')],
    feed: { schema: IsoTime, hint: `must be ${ISO_HINT}` },
    event: At,
  },
  price_local: {
    group: 'price',
    columns: [column('price_local', 'double precision')],
    feed: { name: 'price', schema: Type.Number({ exclusiveMinimum: 0, maximum: 1e13 }) },
    event: Type.Number(),
  },
  currency: { group: 'price', columns: [column('currency', 'text')], feed: { schema: Currency, hint: oneOf(CURRENCIES) }, event: Currency },
  fx_rate: { group: 'price', columns: [column('fx_rate', 'double precision')], event: Type.Number() },
  /** Recomputed exactly from the local price and the recorded rate: the event's own rounding is not read. */
  price_usd: {
    group: 'price',
    columns: [column('price_usd', 'numeric(16, 2)')],
    event: Type.Number(),
    write: (data, row) => void (row.price_usd = usdText(data.price_local as number, data.fx_rate as number)),
  },
  ppm2_usd: { group: 'price', columns: [column('ppm2_usd', 'numeric', { generated: EXACT_PPM2 })] },
  verified_at: {
    group: 'state',
    columns: [column('verified_at', 'timestamptz', { nullable: true })],
    feed: { schema: Type.Optional(Type.Union([IsoTime, Type.Null()])), hint: `must be null or ${ISO_HINT}` },
    absent: null,
  },
  status: { group: 'state', columns: [column('status', 'text')], feed: { schema: Status, hint: oneOf(STATUSES) } },
  /** What /listings may show and an estimate compares with: active, verified and broker-sourced (isPublic says the same of a row in memory). */
  public: {
    group: 'state',
    columns: [column('public', 'boolean', { generated: `status = 'active' and source = 'broker' and verified_at is not null` })],
  },
  /** When the source was seen saying so; a feed line without it was seen when ingested. */
  observed_at: {
    group: 'state',
    columns: [column('observed_at', 'timestamptz')],
    feed: { schema: Type.Optional(IsoTime), hint: `must be ${ISO_HINT}` },
  },
} as const satisfies Record<string, ListingField>

/**
 * The `public` column's rule for a row held in memory (the fold of projections/listings/fold.ts,
 * which writes what the statements write without reading the column back). The batch-against-one-
 * by-one specs of test/projections compare the history both write, so the two cannot drift apart.
 */
export const isPublic = (row: ListingRow): boolean => row.status === 'active' && row.source === 'broker' && row.verified_at != null

type Fields = typeof LISTING_FIELDS
export type ListingFieldName = keyof Fields
const entries = Object.entries(LISTING_FIELDS) as [ListingFieldName, ListingField][]

/** A feed line's fields in the order of docs/feed-format.md (its errors are listed in this order). */
const FEED_ORDER = [
  'source', 'source_id', 'country', 'zone', 'operation', 'property_type', 'price_local', 'currency', 'area_m2', 'bedrooms',
  'bathrooms', 'title', 'broker', 'url', 'listed_at', 'verified_at', 'status', 'observed_at',
] as const satisfies readonly FeedFieldName[]

type FeedFieldName = { [K in ListingFieldName]: Fields[K] extends { feed: object } ? K : never }[ListingFieldName]
type FeedNameOf<K extends FeedFieldName> = Fields[K]['feed'] extends { name: infer N extends string } ? N : K
type FeedProperties = { [K in FeedFieldName as FeedNameOf<K>]: Fields[K]['feed']['schema'] }
type GroupProperties<G extends ListingGroup> = {
  [K in ListingFieldName as Fields[K] extends { group: G; event: TSchema } ? K : never]: Fields[K] extends { event: infer S } ? S : never
}

/** Every field a feed line carries lies in FEED_ORDER: tsc names the one left out. */
type Unordered = Exclude<FeedFieldName, (typeof FEED_ORDER)[number]>
const feedOrderIsComplete: [Unordered] extends [never] ? 'complete' : `add ${Unordered & string} to FEED_ORDER` = 'complete'
void feedOrderIsComplete

const feedNameOf = (name: ListingFieldName): string => (LISTING_FIELDS[name] as ListingField).feed?.name ?? name

/** The properties of a feed line's schema, in FEED_ORDER. */
export const feedProperties = (): FeedProperties =>
  Object.fromEntries(FEED_ORDER.map((name) => [feedNameOf(name), (LISTING_FIELDS[name] as ListingField).feed!.schema])) as FeedProperties

/** What to tell a person about a wrong feed field, by its feed name. */
export const FEED_HINTS: Record<string, string> = Object.fromEntries(
  FEED_ORDER.flatMap((name) => {
    const hint = (LISTING_FIELDS[name] as ListingField).feed!.hint
    return hint ? [[feedNameOf(name), hint]] : []
  }),
)

/** The feed fields that may be left out, with the value they then take (observed_at, the time of ingestion, is the shell's). */
export const FEED_ABSENT: readonly [string, unknown][] = FEED_ORDER.flatMap((name) => {
  const field = LISTING_FIELDS[name] as ListingField
  return 'absent' in field ? [[feedNameOf(name), field.absent] as [string, unknown]] : []
})

const GROUPS = new Map<ListingGroup, [ListingFieldName, ListingField][]>()
for (const entry of entries) GROUPS.set(entry[1].group, [...(GROUPS.get(entry[1].group) ?? []), entry])
/** The fields of a group, in table order. */
export const fieldsOf = (group: ListingGroup): readonly [ListingFieldName, ListingField][] => GROUPS.get(group) ?? []

/** The event schemas of a group's fields (details, price), in table order. */
export const groupProperties = <G extends 'details' | 'price'>(group: G): GroupProperties<G> =>
  Object.fromEntries(fieldsOf(group).flatMap(([name, field]) => (field.event ? [[name, field.event]] : []))) as GroupProperties<G>

/** The details fields a change of which changes what is answered as of a past instant (zone statistics, comparables). */
export const STATISTICAL_FIELDS: readonly ListingFieldName[] = entries.filter(([, field]) => field.statistical).map(([name]) => name)

/**
 * The writer of the columns of `fields` from the event data holding them (a field the data lacks,
 * recorded before the field existed, takes its `absent`). Built once: it runs for every event.
 */
export function columnsWriter(fields: readonly [ListingFieldName, ListingField][]): (data: Record<string, unknown>) => ListingRow {
  const writers = fields.flatMap(([name, field]): ((data: Record<string, unknown>, row: ListingRow) => void)[] => {
    if (field.write) return [field.write]
    const { name: column, generated } = field.columns[0]!
    return generated ? [] : [(data, row) => void (row[column] = data[name] ?? field.absent)]
  })
  return (data) => {
    const row: ListingRow = {}
    for (const write of writers) write(data, row)
    return row
  }
}

/** The values of `fields` from a row of their columns (timestamps as ISO strings). */
export function readColumns(fields: readonly [ListingFieldName, ListingField][], row: ListingRow): Record<string, unknown> {
  const values: Record<string, unknown> = {}
  for (const [name, field] of fields) values[name] = field.read ? field.read(row) : row[field.columns[0]!.name]
  return values
}

/** Event data with each field of `group` it lacks (recorded before the field existed) set, in place, to its `absent`. */
export function withAbsent<T extends Record<string, unknown>>(group: 'details' | 'price', data: T): T {
  for (const [name, field] of fieldsOf(group)) if (data[name] === undefined && 'absent' in field) (data as Record<string, unknown>)[name] = field.absent
  return data
}


/** How a record's column comes back from SQL: as is, a time (to an ISO string), or an exact decimal (as text, to a number). */
export type RecordColumn = { name: string; sql: string; kind: 'value' | 'time' | 'decimal' }
/**
 * One field of a /listings record: its schema, the columns it is read from and how. `repeated`:
 * it takes few values across a market (the in-memory inventory keeps one copy of each);
 * `perRequest`: it depends on the time of the request, not on the row.
 */
export type RecordEntry = {
  schema: TSchema
  columns: readonly RecordColumn[]
  from: (row: ListingRow) => unknown
  repeated?: boolean
  perRequest?: boolean
}

const kindOf = (type: string): RecordColumn['kind'] => (type === 'timestamptz' ? 'time' : type.startsWith('numeric') ? 'decimal' : 'value')
/** A field as the record shows it: read from its columns as the field reads them. */
const shown = <S extends TSchema>(name: ListingFieldName, schema: S, repeated = false): Omit<RecordEntry, 'schema'> & { schema: S } => {
  const field = LISTING_FIELDS[name] as ListingField
  return {
    schema,
    columns: field.columns.map((c) => ({ name: c.name, sql: c.name, kind: kindOf(c.type) })),
    from: field.read ?? ((row) => row[field.columns[0]!.name]),
    repeated,
  }
}

/**
 * A /listings record, in the order its fields are shown (the OpenAPI schema follows). The inventory
 * shows public listings only: they have a broker and a verification time.
 */
export const LISTING_RECORD = {
  id: shown('listing_id', Type.String()),
  country: shown('country', Country, true),
  zone: shown('zone', Type.String(), true),
  zone_slug: { ...shown('zone', Type.String(), true), from: (row: ListingRow) => zoneSlug(row.zone_no as number) },
  operation: shown('operation', Operation, true),
  property_type: shown('property_type', PropertyType, true),
  title: shown('title', Type.String()),
  price_usd: shown('price_usd', Type.Number()),
  price_local: shown('price_local', Type.Number()),
  currency: shown('currency', Currency, true),
  area_m2: shown('area_m2', Type.Number()),
  /** Rounded once, half away from zero, from the exact quotient. */
  price_per_m2_usd: {
    schema: Type.Number(),
    columns: [{ name: 'price_per_m2_usd', sql: 'round(ppm2_usd, 2)', kind: 'decimal' }],
    from: (row: ListingRow) => row.price_per_m2_usd,
  },
  bedrooms: shown('bedrooms', Type.Integer()),
  bathrooms: shown('bathrooms', Type.Number()),
  broker: shown('broker', Type.Object({ id: Type.String(), name: Type.String() }), true),
  verified_at: shown('verified_at', Type.String()),
  listed_at: shown('listed_at', Type.String()),
  days_on_market: { schema: Type.Integer(), columns: [], from: () => undefined, perRequest: true },
  url: shown('url', Type.Union([Type.String(), Type.Null()])),
} as const satisfies Record<string, RecordEntry>

type RecordProperties = { [K in keyof typeof LISTING_RECORD]: (typeof LISTING_RECORD)[K] extends { schema: infer S extends TSchema } ? S : never }
/** The properties of the record's schema, in order. */
export const recordProperties = (): RecordProperties =>
  Object.fromEntries(Object.entries(LISTING_RECORD).map(([name, entry]) => [name, entry.schema])) as RecordProperties
