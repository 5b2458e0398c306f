import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { demoMarketSystem, type TestSystem } from '../support/app.ts'
import { type Json, resolveRefs, schemaValidator } from '../support/openapi.ts'

/**
 * The OpenAPI document as strict as the server (issue 28, item 13): what a validating proxy or a
 * generated client checks with the document's schemas (query text, headers, zones) is refused
 * exactly when the server refuses it; every operation shows a success example its schema accepts.
 */
describe('the OpenAPI document refuses what the server refuses', () => {
  let system: TestSystem
  let document: Json
  let key: string
  const ajv = schemaValidator()

  beforeAll(async () => {
    ;({ system, key } = await demoMarketSystem('enterprise'))
    document = (await (await system.request('/api/v1/openapi.json')).json()) as Json
  })
  afterAll(() => system?.close())

  const parameter = (path: string, method: string, name: string) =>
    (document.paths[path][method].parameters as Json[]).find((p) => p.name === name)!.schema as Json
  const accepts = (schema: Json, text: string) => ajv.validate(schema, text)

  /** The parameter's text: does the document accept it, and does the server (200, or 400 naming the parameter)? */
  async function verdicts(path: string, name: string, texts: string[], request: (text: string) => string) {
    const schema = parameter(path, 'get', name)
    const found: [string, boolean, boolean][] = []
    for (const text of texts) {
      const response = await system.request(request(encodeURIComponent(text)), { key })
      expect([200, 400], `${name}=${text}`).toContain(response.status)
      found.push([text, accepts(schema, text), response.status === 200])
    }
    return found
  }

  const agree = (found: [string, boolean, boolean][]) => {
    for (const [text, documented, served] of found) expect(documented, `document vs server on ${JSON.stringify(text)}`).toBe(served)
  }

  test('limit and offset: `05`, `+5`, `1.0`, out of range are refused by both; `5`, `200`, `0` offset accepted by both', async () => {
    const texts = ['05', '+5', '1.0', '1e1', '', '0', '201', '1000', '5', '1', '20', '199', '200', ' 5']
    const limit = await verdicts('/api/v1/listings', 'limit', texts, (t) => `/api/v1/listings?limit=${t}`)
    agree(limit)
    expect(limit.filter(([, documented]) => documented).map(([text]) => text)).toEqual(['5', '1', '20', '199', '200'])
    agree(await verdicts('/api/v1/listings', 'offset', ['0', '00', '10000', '10001', '9999', '-1', '7'], (t) => `/api/v1/listings?offset=${t}`))
  })

  test('price_min and price_max: `1e5`, `0150`, `.5`, `5.` refused by both; `150000`, `1999.99`, `0.5` accepted by both', async () => {
    const texts = ['1e5', '0150', '.5', '5.', '-1', '1000000000001', '1000000000000.01', '150000', '1999.99', '0.5', '0', '1000000000000', '1000000000000.00']
    const found = await verdicts('/api/v1/listings', 'price_min', texts, (t) => `/api/v1/listings?price_min=${t}`)
    agree(found)
    expect(found.filter(([, documented]) => documented).map(([text]) => text)).toEqual(['150000', '1999.99', '0.5', '0', '1000000000000', '1000000000000.00'])
    agree(await verdicts('/api/v1/listings', 'price_max', ['1e5', '99', '99.5'], (t) => `/api/v1/listings?price_max=${t}`))
  })

  test('months of /zone/{slug}/history: `012`, `0`, `37` refused by both; `1`, `12`, `36` accepted by both', async () => {
    agree(await verdicts('/api/v1/zone/{slug}/history', 'months', ['012', '0', '37', '1.5', '1', '12', '36'], (t) => `/api/v1/zone/zona-3/history?months=${t}`))
  })

  test('a zone: its name and its slug in any letter case are accepted by the path, the query and every body schema (briefings, webhooks); other forms by none', () => {
    const schemas = [
      parameter('/api/v1/zone/{slug}', 'get', 'slug'),
      parameter('/api/v1/zone/{slug}/history', 'get', 'slug'),
      parameter('/api/v1/listings', 'get', 'zone'),
      ...Object.values(document.paths as Json)
        .map((methods) => methods.post?.requestBody?.content['application/json'].schema.properties.zone)
        .filter(Boolean),
    ] as Json[]
    // The two paths and /listings, the five briefing personas and POST /webhooks.
    expect(schemas).toHaveLength(3 + 5 + 1)
    for (const schema of schemas) {
      for (const good of ['Zona 3', 'zona-3', 'ZONA 3', 'zona 10', 'Zona-999']) expect(accepts(schema, good), good).toBe(true)
      for (const bad of ['Zona 03', 'zona_3', 'zona3', 'Zona  3', 'zona-0', ' zona-3', 'zone-3']) expect(accepts(schema, bad), bad).toBe(false)
    }
  })

  test('Idempotency-Key: empty, with a space or over 255 characters refused by the document as by the server; a visible ASCII key accepted', async () => {
    const schema = parameter('/api/v1/briefings/investor', 'post', 'Idempotency-Key')
    const send = (header: string) =>
      system.request('/api/v1/briefings/investor', {
        key,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': header },
        body: JSON.stringify({ zone: 'zona-3', profile: 'balanced' }),
      })
    for (const header of ['', 'two words', 'x'.repeat(256), 'é']) {
      expect(accepts(schema, header), JSON.stringify(header)).toBe(false)
      if (header !== 'é') expect((await send(header)).status, JSON.stringify(header)).toBe(400)
    }
    for (const header of ['order-4711-briefing', 'x'.repeat(255), '!~']) {
      expect(accepts(schema, header), header).toBe(true)
      expect((await send(header)).status, header).toBe(200)
    }
  })

  test('every operation has a success example, and its success schema (200, or 201 for a creation) accepts it', () => {
    let operations = 0
    for (const [path, methods] of Object.entries(document.paths as Json)) {
      for (const [method, operation] of Object.entries(methods as Json)) {
        operations++
        const media = (operation.responses['200'] ?? operation.responses['201']).content
        // A streamed file (the export): each of its media types is described, and NDJSON has an example.
        if (!media['application/json']) {
          expect(Object.keys(media), `${method} ${path}`).toEqual(['application/x-ndjson', 'text/csv', 'application/vnd.apache.parquet'])
          expect(media['application/x-ndjson'].example, `${method} ${path}`).toMatch(/"cursor":"c1\./)
          continue
        }
        const content = media['application/json']
        const examples = Object.values(content.examples ?? {}) as Json[]
        expect(examples.length, `${method} ${path}`).toBeGreaterThan(0)
        const schema = resolveRefs(content.schema, document) as Json
        for (const example of examples) expect(ajv.validate(schema, example.value), `${method} ${path}: ${JSON.stringify(ajv.errors)}`).toBe(true)
      }
    }
    expect(operations).toBe(19)
  })
})
