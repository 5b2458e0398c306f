import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { openPglite } from '../../src/db/pglite.ts'
import { startTestSystem } from '../support/app.ts'
import { type Json, resolveRefs, schemaValidator } from '../support/openapi.ts'

/**
 * The OpenAPI document and the server agree on every input, property-based: requests are generated
 * from the served document (each parameter's and body's schema), sent to the real app (PGlite, a
 * small demo market, an admin key: neither rate limit nor quota), and every answer is what the
 * document says: what it allows is served (200, or 404 where the operation documents one), what it
 * forbids is a 400 `invalid_request` naming exactly the bad fields.
 *
 * The rules outside JSON Schema: the documented reading of query text (info.description): integers
 * are decimal digits without sign or leading zeros, amounts decimal text; and an instant (`as_of`,
 * described "not before the first listing event") is a real calendar time from the market's first
 * listing event to the time of the request.
 */

const system = await startTestSystem(await openPglite())
const document = (await (await system.request('/api/v1/openapi.json')).json()) as Json
const ajv = schemaValidator()

type Parameter = { name: string; in: 'path' | 'query' | 'header'; required: boolean; description?: string; schema: Json }
type Operation = { method: string; path: string; id: string; parameters: Parameter[]; body: Json | undefined; documents404: boolean; ok: Json }

const operations: Operation[] = Object.entries(document.paths as Json).flatMap(([path, methods]) =>
  Object.entries(methods as Json).map(([method, op]) => ({
    method: method.toUpperCase(),
    path,
    id: op.operationId as string,
    parameters: ((op.parameters ?? []) as Parameter[]).filter((p) => p.in !== 'header'),
    body: op.requestBody && (resolveRefs(op.requestBody.content['application/json'].schema, document) as Json),
    documents404: '404' in op.responses,
    // A streamed export is checked for its cursor (test/listings/export.test.ts reads every format back);
    // a creation (POST /webhooks) answers 201.
    ok: (op.responses['200'] ?? op.responses['201']).content['application/json']
      ? (resolveRefs((op.responses['200'] ?? op.responses['201']).content['application/json'].schema, document) as Json)
      : { type: 'object', required: ['cursor', 'count'], properties: { cursor: { type: 'string', pattern: '^c1\\.' }, count: { type: 'integer' } } },
  })),
)

const INTEGER_TEXT = /^(?:0|[1-9][0-9]*)$/
const DECIMAL_TEXT = /^(?:0|[1-9][0-9]*)(?:\.[0-9]+)?$/

/** The value query text stands for, by the documented rule; anything else stays text. */
const valueOfText = (schema: Json, text: string): unknown =>
  schema.type === 'integer' ? (INTEGER_TEXT.test(text) ? Number(text) : text) : schema.type === 'number' ? (DECIMAL_TEXT.test(text) ? Number(text) : text) : text
const textOfValue = (value: unknown) => String(value)

/** Zone names and slugs the market has, so that generated zones often exist (the rest are 404 or empty pages). */
let known: string[] = []
/** The zone names of each country, so that generated bodies often name a zone their country has. */
const zonesOf = new Map<string, string[]>()
let admin = ''
/** The market's first listing event and the end of the instants generated as allowed (before any request's time). */
let firstEvent = 0
let generatedUntil = 0
/** Cursors answers gave: the only texts the document allows for a cursor. */
let cursors: string[] = []
beforeAll(async () => {
  await system.run('demo seed', { listings: 112 })
  await system.settle()
  admin = (await system.ownerWithKey('boss', 'admin')).key
  const countries = (document.paths['/api/v1/zones'].get.parameters as Parameter[]).find((p) => p.name === 'country')!.schema.examples as string[]
  for (const country of countries) {
    const zones = (await (await system.request(`/api/v1/zones?country=${country}`, { key: admin })).json()) as { zones: { zone: string; slug: string }[] }
    known.push(...zones.zones.flatMap((zone) => [zone.zone, zone.slug]))
    zonesOf.set(country, zones.zones.map((zone) => zone.zone))
  }
  known = [...new Set(known)]
  const refused = (await (await system.request('/api/v1/zones?as_of=1970-01-01T00:00:00Z', { key: admin })).json()) as { message: string }
  firstEvent = Date.parse(/the first listing event is at (\S+)\)/.exec(refused.message)![1]!)
  generatedUntil = Date.now()
  // Cursors answers gave: the export's, the beginning's, and some changes' along the feed.
  const exported = await system.request('/api/v1/listings/export', { key: admin })
  await exported.arrayBuffer()
  const changes = (await (await system.request('/api/v1/listings/changes?limit=50', { key: admin })).json()) as { changes: { cursor: string }[]; next_cursor: string }
  cursors = [exported.headers.get('mirador-cursor')!, changes.next_cursor, ...changes.changes.slice(0, 10).map((change) => change.cursor)]
}, 120_000)

/** Whether a parameter is an instant (the documented rule above). */
const isInstant = (p: Parameter) => /not before the first listing event/.test(p.description ?? '')
/** An opaque cursor: only what an answer gave is one (collected in beforeAll). */
const isCursor = (p: Parameter) => /a cursor an answer gave/.test(p.description ?? '')
/** Instants a client may ask: from the first listing event to now, in UTC or with an offset. */
const allowedInstant = () =>
  fc
    .tuple(fc.integer({ min: firstEvent, max: generatedUntil }), fc.constantFrom(0, -360, 330), fc.boolean())
    .map(([ms, offset, millis]) => {
      const local = new Date(ms + offset * 60_000).toISOString().slice(0, millis ? 23 : 19)
      const sign = offset < 0 ? '-' : '+'
      const zone = offset === 0 ? 'Z' : `${sign}${String(Math.floor(Math.abs(offset) / 60)).padStart(2, '0')}:${String(Math.abs(offset) % 60).padStart(2, '0')}`
      return millis ? `${local}${zone}` : `${local.slice(0, 19)}${zone}`
    })
    .filter((text) => Date.parse(text) >= firstEvent)
/** Whether text is an instant the server answers: the pattern, a real calendar time, in the market's range. */
function instantAllowed(schema: Json, text: string): boolean {
  if (!new RegExp(schema.pattern).test(text)) return false
  const [year, month, day, hour, minute] = [0, 5, 8, 11, 14].map((at) => Number(text.slice(at, at + (at === 0 ? 4 : 2))))
  const calendar = new Date(Date.UTC(year!, month! - 1, day!))
  if (calendar.getUTCFullYear() !== year || calendar.getUTCMonth() !== month! - 1 || calendar.getUTCDate() !== day || hour! > 23 || minute! > 59) return false
  const at = Date.parse(text)
  return !Number.isNaN(at) && at >= firstEvent && at <= Date.now()
}
afterAll(() => system.close())

const randomCase = (text: string) =>
  fc.array(fc.boolean(), { minLength: text.length, maxLength: text.length }).map((upper) => [...text].map((c, i) => (upper[i] ? c.toUpperCase() : c.toLowerCase())).join(''))

/** Values a schema allows: enums, strings of its pattern (the market's zones among them, in any case the pattern allows), in-range integers, amounts. */
function allowed(schema: Json): fc.Arbitrary<unknown> {
  if (schema.enum) return fc.constantFrom(...(schema.enum as unknown[]))
  switch (schema.type) {
    case 'integer':
      return fc.integer({ min: schema.minimum ?? -1_000_000, max: schema.maximum ?? 1_000_000 })
    case 'number': {
      const low = BigInt(Math.ceil((schema.minimum ?? schema.exclusiveMinimum ?? 0) * 100))
      const high = BigInt(Math.floor((schema.maximum ?? 1e9) * 100))
      return fc
        .bigInt({ min: low, max: high })
        .map((cents) => Number(cents) / 100)
        .filter((n) => schema.exclusiveMinimum === undefined || n > schema.exclusiveMinimum)
    }
    case 'string': {
      if (!schema.pattern) return fc.string({ minLength: 1 })
      const pattern = new RegExp(schema.pattern)
      const matching = known.filter((value) => pattern.test(value))
      const spelled = matching.map((value) => (pattern.test(value.toUpperCase()) && pattern.test(value.toLowerCase()) ? randomCase(value) : fc.constant(value)))
      return spelled.length > 0 ? fc.oneof({ arbitrary: fc.stringMatching(pattern), weight: 1 }, { arbitrary: fc.oneof(...spelled), weight: 3 }) : fc.stringMatching(pattern)
    }
    default:
      throw new Error(`no generator for ${JSON.stringify(schema)}`)
  }
}

/** Text a client may send: anything, near-misses of allowed values (spaces, leading zeros, case, a letter more), out-of-range numbers. */
function anyText(schema: Json): fc.Arbitrary<string> {
  const near = allowed(schema).chain((value) => {
    const text = textOfValue(value)
    return fc.constantFrom(` ${text}`, `${text} `, `0${text}`, `${text}x`, text.toUpperCase(), text.toLowerCase(), `+${text}`, `${text}.`, `${text}e0`)
  })
  const noise = fc.string({ unit: fc.constantFrom(...'aZzoN 09-_.,+%&=éſK\u212A\t#/'.split('')), maxLength: 12 })
  const outOfRange =
    schema.type === 'integer' || schema.type === 'number'
      ? fc.oneof(fc.bigInt({ min: -(10n ** 6n), max: -1n }), fc.bigInt({ min: BigInt(schema.maximum ?? 1e9) + 1n, max: BigInt(schema.maximum ?? 1e9) * 10n })).map(String)
      : noise
  return fc.oneof({ arbitrary: near, weight: 3 }, { arbitrary: noise, weight: 1 }, { arbitrary: outOfRange, weight: 1 })
}

/** A parameter's place in the request target. */
const encode = (text: string, plus: boolean) => (plus ? encodeURIComponent(text).replaceAll('%20', '+') : encodeURIComponent(text))

/** Pairs `low ≤ high` the document states in words ("not below price_min"). */
const orderedPairs = (op: Operation) =>
  op.parameters.flatMap((p) => {
    const low = /not below (\w+)/.exec(p.description ?? '')?.[1]
    return low ? [{ low, high: p.name }] : []
  })

/** Parameters the document allows only beside another ("only with country"). */
const companions = (op: Operation) =>
  op.parameters.flatMap((p) => {
    const needed = /only with (\w+)/.exec(p.description ?? '')?.[1]
    return needed ? [{ name: p.name, needed }] : []
  })

type Sent = Record<string, string>

/** Text the document allows for `p`, by its schema; instants and cursors by what they are. */
const allowedText = (p: Parameter): fc.Arbitrary<string> =>
  isInstant(p) ? allowedInstant() : isCursor(p) ? fc.constantFrom(...cursors) : allowed(p.schema).map(textOfValue)
const textAllowed = (p: Parameter, text: string): boolean =>
  isInstant(p) ? instantAllowed(p.schema, text) : isCursor(p) ? cursors.includes(text) : ajv.validate(p.schema, valueOfText(p.schema, text))

function target(op: Operation, sent: Sent, repeated: string[] = [], plus = false): string {
  let path = op.path
  const query: string[] = []
  for (const p of op.parameters) {
    if (!(p.name in sent)) continue
    if (p.in === 'path') path = path.replace(`{${p.name}}`, encode(sent[p.name]!, false))
    else for (let i = 0; i < (repeated.includes(p.name) ? 2 : 1); i++) query.push(`${encode(p.name, plus)}=${encode(sent[p.name]!, plus)}`)
  }
  return query.length ? `${path}?${query.join('&')}` : path
}

/** Parameters the document allows, as text: every required one, some optional ones, ordered pairs in order. */
function allowedParameters(op: Operation): fc.Arbitrary<Sent> {
  const entries = op.parameters.map((p) => {
    const text = allowedText(p)
    return [p.name, p.required ? text : fc.option(text, { nil: undefined })] as const
  })
  return fc.record(Object.fromEntries(entries)).map((values) => {
    const sent = Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined)) as Sent
    for (const { low, high } of orderedPairs(op)) {
      if (low in sent && high in sent && Number(sent[low]) > Number(sent[high])) [sent[low], sent[high]] = [sent[high]!, sent[low]!]
    }
    for (const { name, needed } of companions(op)) if (!(needed in sent)) delete sent[name]
    return sent
  })
}

/** The parameters the document forbids in `sent`: by each schema, then by the ordered pairs. */
function forbiddenParameters(op: Operation, sent: Sent): { fields: string[]; pair: string[] } {
  const fields = op.parameters
    .filter((p) => p.name in sent && !textAllowed(p, sent[p.name]!))
    .map((p) => p.name)
  // Without its companion the parameter is refused; beside a refused one, only the companion is named.
  for (const { name, needed } of companions(op)) if (name in sent && !(needed in sent) && !fields.includes(name)) fields.push(name)
  const pair = orderedPairs(op).find(
    ({ low, high }) => low in sent && high in sent && !fields.includes(low) && !fields.includes(high) && Number(sent[low]) > Number(sent[high]),
  )
  return { fields, pair: pair ? [pair.low, pair.high] : [] }
}

type Answer = { status: number; body: Json; requestId: string | null }

async function send(op: Operation, path: string, body?: unknown): Promise<Answer> {
  const init = body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }
  const response = await system.request(path, { method: op.method, key: admin, ...init })
  const json = /^application\/json/.test(response.headers.get('content-type') ?? '')
  // A streamed export (NDJSON, CSV or Parquet) is read whole; what it is as of is its Mirador-Cursor.
  const answered = (json ? await response.json() : { cursor: response.headers.get('mirador-cursor'), count: (await response.arrayBuffer()).byteLength }) as Json
  return { status: response.status, body: answered, requestId: response.headers.get('x-request-id') }
}

function expectServed(op: Operation, answer: Answer, what: string) {
  if (answer.status === 404 && op.documents404) {
    expect(answer.body.error, what).toBe('not_found')
    return
  }
  expect(answer.status, `${what}: ${JSON.stringify(answer.body).slice(0, 300)}`).toBe(200)
  expect(ajv.validate(op.ok, answer.body), `${what}: ${JSON.stringify(ajv.errors)}`).toBe(true)
}

/** A 400 naming exactly `fields`; of an ordered pair that is out of order, either may be named. */
function expectRefused(answer: Answer, fields: string[], pair: string[], what: string) {
  expect(answer.status, `${what}: ${JSON.stringify(answer.body).slice(0, 300)}`).toBe(400)
  expect(answer.body, what).toMatchObject({ ok: false, error: 'invalid_request', message: expect.any(String) })
  expect(answer.requestId, what).toBeTruthy()
  const named = (answer.body.details as { field: string; message: string }[]).map((d) => d.field)
  expect(named.filter((field) => !pair.includes(field)).sort(), what).toEqual([...fields].sort())
  if (pair.length > 0) expect(named.some((field) => pair.includes(field)), what).toBe(true)
  for (const detail of answer.body.details as { message: string }[]) expect(detail.message, what).not.toMatch(/\^|\$|\[0-9\]/)
}

const RUNS = { numRuns: 40 }

/** A body the generators below model: the briefings' (see the body tests). */
const modelledBody = (op: Operation) => op.path.startsWith('/api/v1/briefings/')

// POST /webhooks has no parameters and a body these generators do not model: nothing of it is checked here.
for (const op of operations.filter((o) => !o.body || modelledBody(o) || o.parameters.length > 0)) {
  describe(`${op.method} ${op.path} (${op.id})`, () => {
    if (!op.body) {
      test('serves every request whose parameters the document allows: values in any letter case it allows, in-range numbers, known and unknown zones', async () => {
        await fc.assert(
          fc.asyncProperty(allowedParameters(op), fc.boolean(), async (sent, plus) => {
            const path = target(op, sent, [], plus)
            expectServed(op, await send(op, path), path)
          }),
          RUNS,
        )
      }, 120_000)
    }

    if (op.parameters.length > 0) {
      /** Sends `sent` with `bad` texts in place: served when the document allows every value, else 400 naming exactly the bad ones. */
      const answersAsDocumented = async (sent: Sent, bad: readonly (readonly [string, string])[]) => {
        const request = { ...sent, ...Object.fromEntries(bad) }
        // A path segment that is empty or a dot segment is another path, not a value of the parameter.
        fc.pre(op.parameters.filter((p) => p.in === 'path').every((p) => !['', '.', '..'].includes(request[p.name]!)))
        const path = target(op, request)
        const { fields, pair } = forbiddenParameters(op, request)
        const answer = await send(op, path)
        if (fields.length === 0 && pair.length === 0) expectServed(op, answer, path)
        else expectRefused(answer, fields, pair, path)
      }

      for (const parameter of op.parameters) {
        test(`answers any text for ${parameter.name} as the document says: served when it allows it, else 400 naming ${parameter.name}`, async () => {
          await fc.assert(
            fc.asyncProperty(allowedParameters(op), anyText(parameter.schema), (sent, text) => answersAsDocumented(sent, [[parameter.name, text]])),
            { numRuns: 60 },
          )
        }, 120_000)
      }

      if (op.parameters.length > 1) {
        test('names every bad parameter at once', async () => {
          const bad = fc
            .uniqueArray(fc.constantFrom(...op.parameters), { minLength: 2, maxLength: 4, selector: (p) => p.name })
            .chain((chosen) => fc.tuple(...chosen.map((p) => anyText(p.schema).map((text) => [p.name, text] as const))))
          await fc.assert(fc.asyncProperty(allowedParameters(op), bad, answersAsDocumented), RUNS)
        }, 120_000)
      }

      const queryParameters = op.parameters.filter((p) => p.in === 'query')
      if (queryParameters.length > 0) {
        test('refuses a query parameter given twice, even with an allowed value, naming it', async () => {
          const twice = fc
            .constantFrom(...queryParameters)
            .chain((p) => allowedText(p).map((text) => ({ name: p.name, text })))
          await fc.assert(
            fc.asyncProperty(allowedParameters(op), twice, async (sent, twice) => {
              const request = { ...sent, [twice.name]: sent[twice.name] ?? twice.text }
              const path = target(op, request, [twice.name])
              expectRefused(await send(op, path), [twice.name], [], path)
            }),
            RUNS,
          )
        }, 120_000)
      }
    }

    // The briefing bodies, one schema per persona. POST /webhooks's body has rules between its fields
    // (a zone needs its country, a zone alert its threshold), which these generators do not model: its
    // refusals and the document's verdict on each are compared in test/webhooks/subscriptions.test.ts.
    if (op.body && modelledBody(op)) {
      const schema = op.body
      const properties = Object.entries(schema.properties as Record<string, Json>)
      const validBody = fc
        .record(Object.fromEntries(properties.map(([name, property]) => [name, allowed(property)])), { requiredKeys: schema.required as string[] })
        .chain((body) => {
          const zones = zonesOf.get(String(body.country ?? 'GT').toUpperCase()) ?? []
          return zones.length > 0 ? fc.oneof(fc.constant(body), fc.constantFrom(...zones).map((zone) => ({ ...body, zone }))) : fc.constant(body)
        })
        .map((body) => body as Json)

      test('serves every body the document allows (200, or 404 for a zone the market lacks)', async () => {
        await fc.assert(
          fc.asyncProperty(validBody, async (body) => {
            expect(ajv.validate(schema, body), JSON.stringify(ajv.errors)).toBe(true)
            expectServed(op, await send(op, op.path, body), JSON.stringify(body))
          }),
          { numRuns: 30 },
        )
      }, 120_000)

      test('answers any field value, unknown field or missing field as the document says', async () => {
        const anyValue = fc.oneof(
          fc.string({ maxLength: 12 }),
          fc.integer(),
          fc.double({ noNaN: true, noDefaultInfinity: true }),
          fc.boolean(),
          fc.constant(null),
          fc.array(fc.integer(), { maxLength: 2 }),
          fc.dictionary(fc.string({ maxLength: 3 }), fc.integer(), { maxKeys: 1 }),
        )
        const fieldValue = (property: Json) =>
          fc.oneof(anyValue, allowed(property), allowed(property).chain((v) => (typeof v === 'string' ? fc.constantFrom(v.toUpperCase(), v.toLowerCase(), ` ${v}`, `${v}x`) : fc.constant(v))))
        const change = fc.oneof(
          fc.constantFrom(...properties).chain(([name, property]) => fieldValue(property).map((value) => ({ name, value, kind: 'value' as const }))),
          fc.stringMatching(/^[a-z_]{1,12}$/).filter((name) => !(name in schema.properties)).map((name) => ({ name, value: 1 as unknown, kind: 'unknown' as const })),
          fc.constantFrom(...(schema.required as string[])).map((name) => ({ name, value: undefined as unknown, kind: 'missing' as const })),
        )
        await fc.assert(
          fc.asyncProperty(validBody, change, async (valid, { name, value, kind }) => {
            const body: Json = { ...valid, [name]: value }
            if (kind === 'missing') delete body[name]
            const answer = await send(op, op.path, body)
            if (ajv.validate(schema, body)) expectServed(op, answer, JSON.stringify(body))
            else expectRefused(answer, [name], [], JSON.stringify(body))
          }),
          { numRuns: 60 },
        )
      }, 120_000)

      test('refuses a body that is not an object, and an unknown persona is an unknown path (404)', async () => {
        for (const body of [[], 'Zona 1', 3, null]) expect((await send(op, op.path, body)).status, JSON.stringify(body)).toBe(400)
        const unknown = op.path.replace(/[^/]+$/, 'astrologer')
        expect(document.paths[unknown]).toBeUndefined()
        const answer = await send(op, unknown, { zone: 'Zona 1', profile: schema.properties.profile.enum[0] })
        expect(answer).toMatchObject({ status: 404, body: { ok: false, error: 'not_found' } })
      })
    }
  })
}
