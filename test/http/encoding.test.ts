import { gunzipSync, brotliDecompressSync } from 'node:zlib'
import { describe, expect, test } from 'vitest'
import { codedEtag, encoded, negotiatedCoding, noneMatchHits, strongEtag } from '../../src/http/encoding.ts'

describe('Accept-Encoding (RFC 9110 §12.5.3)', () => {
  test.each([
    [null, null],
    ['', null],
    ['gzip', 'gzip'],
    ['x-gzip', 'gzip'],
    ['gzip, deflate, br, zstd', 'br'],
    ['gzip;q=1.0, br;q=0.5', 'gzip'],
    ['br;q=0, gzip', 'gzip'],
    ['BR;Q=0.8, GZIP;q=0.9', 'gzip'],
    ['*', 'br'],
    ['*;q=0.5, br;q=0', 'gzip'],
    ['identity', null],
    ['identity, gzip;q=0.5', null],
    ['identity;q=0.5, gzip', 'gzip'],
    ['gzip;q=0, br;q=0', null],
    ['identity;q=0, deflate', null],
    ['gzip;q=2', null],
    ['gzip;q=0.0001', null],
    ['gzip ; q=0.3 , br ; q=0.2', 'gzip'],
  ])('%j → %j', (header, coding) => {
    expect(negotiatedCoding(header)).toBe(coding)
  })
})

describe('validators', () => {
  const bytes = new TextEncoder().encode('{"ok":true}')
  const etag = strongEtag(bytes)

  test('a strong ETag of the bytes, another per coding', () => {
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{22}"$/)
    expect(strongEtag(new TextEncoder().encode('{"ok":true}'))).toBe(etag)
    expect(strongEtag(new TextEncoder().encode('{"ok":false}'))).not.toBe(etag)
    expect(codedEtag(etag, 'br')).toBe(`${etag.slice(0, -1)}-br"`)
    expect(codedEtag(etag, null)).toBe(etag)
  })

  test.each([
    [null, false],
    ['*', true],
    ['"other"', false],
    ['ETAG', true],
    ['W/ETAG', true],
    ['"a", ETAG_BR', true],
    ['"a",W/ETAG_GZIP', true],
  ])('If-None-Match %s → %s', (header, hits) => {
    const written = header?.replace('ETAG_BR', codedEtag(etag, 'br')).replace('ETAG_GZIP', codedEtag(etag, 'gzip')).replace('ETAG', etag) ?? null
    expect(noneMatchHits(written, etag)).toBe(hits)
  })

  test('compressed copies decompress to the bytes', async () => {
    const large = new TextEncoder().encode(JSON.stringify(Array.from({ length: 500 }, (_, i) => ({ zone: `Zona ${i}` }))))
    expect(gunzipSync(await encoded(large, 'gzip')).equals(large)).toBe(true)
    expect(brotliDecompressSync(await encoded(large, 'br')).equals(large)).toBe(true)
  })
})
