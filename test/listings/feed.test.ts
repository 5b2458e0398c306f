import { describe, expect, it } from 'vitest'
import { MAX_OBSERVED_AHEAD_MS, parseFeedLine } from '../../src/domain/listings/feed.ts'
import { aLine } from '../support/market.ts'

const NOW = new Date('2026-04-01T00:00:00.000Z')
const parse = (line: Record<string, unknown> | string, lineNo = 7) =>
  parseFeedLine(typeof line === 'string' ? line : JSON.stringify(line), lineNo, NOW)

/** The fields a rejected line names. */
const fieldsOf = (line: Record<string, unknown> | string) => {
  const result = parse(line)
  if (result.ok) throw new Error('expected the line to be rejected')
  return result.details.map((d) => d.field)
}

describe('feed line validation', () => {
  it('accepts a valid line and normalises times to UTC', () => {
    const result = parse(aLine({ listed_at: '2026-03-01T04:00:00-06:00', observed_at: '2026-03-02' }))
    expect(result).toEqual({
      ok: true,
      record: expect.objectContaining({
        source: 'broker',
        source_id: 'brk-1',
        price: 1_550_000,
        listed_at: '2026-03-01T10:00:00.000Z',
        observed_at: '2026-03-02T00:00:00.000Z',
        verified_at: null,
      }),
    })
  })

  it('defaults observed_at to the time of the run, and optional fields to null', () => {
    const { observed_at: _o, url: _u, broker: _b, verified_at: _v, ...line } = aLine({ source: 'scraped' })
    const result = parse(line)
    expect(result.ok && result.record).toMatchObject({ observed_at: NOW.toISOString(), url: null, broker: null, verified_at: null })
  })

  it('reports malformed JSON and non-objects with the line number', () => {
    const broken = parse('{"source": "broker",', 12)
    expect(broken.ok).toBe(false)
    expect(!broken.ok && broken.reason).toMatch(/^line 12: not valid JSON/)
    for (const text of ['[]', '42', 'null', '"text"']) {
      expect(parse(text, 3)).toMatchObject({ ok: false, line: 3, reason: 'line 3: must be a JSON object' })
    }
  })

  it.each([
    ['source', 'agency', /one of broker, scraped/],
    ['country', 'MX', /one of GT, SV, HN, CR, BZ, DO, PA, BR/],
    ['country', 'gt', /one of/],
    ['zone', 'zona 10', /Zona N/],
    ['zone', 'Zona 010', /Zona N/],
    ['zone', 'Zona 1000000', /Zona N/],
    ['operation', 'venta', /one of Venta, Renta/],
    ['property_type', 'Chalet', /one of Apartamento, Casa, Terreno, Oficina, Local, Bodega/],
    ['currency', 'EUR', /one of USD/],
    ['status', 'sold', /one of active, delisted/],
    ['price', 0, /greater than 0/],
    ['price', '1000', /number/i],
    ['area_m2', -5, /greater than 0/],
    ['bedrooms', 1.5, /integer/i],
    ['bathrooms', -1, /greater or equal/],
    ['title', '', /length/i],
    ['source_id', '', /length/i],
    ['url', 'ftp://x.example/1', /http/],
    ['listed_at', '01/03/2026', /ISO 8601/],
    ['listed_at', '2026-02-30T00:00:00Z', /not a valid calendar date/],
    ['listed_at', '2026-03-01T10:00:00', /ISO 8601/],
    ['verified_at', 'yesterday', /ISO 8601/],
    ['observed_at', 1_772_366_400_000, /ISO 8601/],
  ])('rejects %s = %j, naming the field', (field, value, message) => {
    const result = parse(aLine({ [field]: value }))
    expect(result.ok).toBe(false)
    if (result.ok) return
    expect(result.details).toEqual([{ field, message: expect.stringMatching(message) }])
    expect(result.reason).toMatch(new RegExp(`^line 7: ${field}: `))
  })

  it('rejects a missing required field and an unknown field', () => {
    const { price: _p, ...withoutPrice } = aLine()
    expect(fieldsOf(withoutPrice)).toEqual(['price'])
    expect(parse(aLine({ prize: 3 } as never))).toMatchObject({
      ok: false,
      details: [{ field: 'prize', message: 'is not a feed field' }],
    })
  })

  it('requires a broker for broker listings, not for scraped ones', () => {
    expect(parse(aLine({ broker: null }))).toMatchObject({
      ok: false,
      details: [{ field: 'broker', message: 'is required for source broker' }],
    })
    expect(parse(aLine({ source: 'scraped', broker: null })).ok).toBe(true)
    expect(parse(aLine({ broker: { id: 'x' } }))).toMatchObject({
      ok: false,
      details: [{ field: 'broker', message: 'must be null or {"id": "...", "name": "..."}' }],
    })
  })

  it('accepts only the local currency or US dollars of the country', () => {
    expect(parse(aLine({ country: 'GT', currency: 'USD' })).ok).toBe(true)
    expect(parse(aLine({ country: 'GT', currency: 'BRL' }))).toMatchObject({
      ok: false,
      details: [{ field: 'currency', message: 'BRL is not used in GT (use GTQ or USD)' }],
    })
    expect(parse(aLine({ country: 'SV', currency: 'USD' })).ok).toBe(true)
    expect(parse(aLine({ country: 'PA', currency: 'PAB' })).ok).toBe(true)
  })

  it('rejects times out of order', () => {
    expect(fieldsOf(aLine({ listed_at: '2026-03-02T00:00:00Z' }))).toEqual(['listed_at'])
    expect(fieldsOf(aLine({ verified_at: '2026-02-28T00:00:00Z' }))).toEqual(['verified_at'])
    expect(fieldsOf(aLine({ verified_at: '2026-03-01T13:00:00Z' }))).toEqual(['verified_at'])
    expect(parse(aLine({ verified_at: '2026-03-01T11:00:00Z' })).ok).toBe(true)
  })

  it('refuses a line observed more than MAX_OBSERVED_AHEAD_MS (5 minutes) after the time of the run', () => {
    expect(MAX_OBSERVED_AHEAD_MS).toBe(5 * 60 * 1000)
    const ahead = (ms: number) => aLine({ observed_at: new Date(NOW.getTime() + ms).toISOString() })
    expect(parse(ahead(MAX_OBSERVED_AHEAD_MS)).ok).toBe(true)
    expect(parse(ahead(MAX_OBSERVED_AHEAD_MS + 1))).toEqual({
      ok: false,
      line: 7,
      reason: 'line 7: observed_at: is in the future (more than 5 minutes after the time of the run, 2026-04-01T00:00:00.000Z)',
      details: [{ field: 'observed_at', message: 'is in the future (more than 5 minutes after the time of the run, 2026-04-01T00:00:00.000Z)' }],
    })
    // listed_at and verified_at are not after observed_at, so none of the three is in the future.
    expect(fieldsOf(aLine({ listed_at: '2026-05-01T00:00:00Z', observed_at: '2026-05-01T00:00:00Z' }))).toEqual(['observed_at'])
  })

  it('names every bad field of a line at once', () => {
    expect(fieldsOf(aLine({ country: 'XX', price: -1, zone: 'Z1', status: 'gone' })).sort()).toEqual(
      ['country', 'price', 'status', 'zone'].sort(),
    )
  })
})
