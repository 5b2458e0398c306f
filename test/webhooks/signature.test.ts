import { Buffer } from 'node:buffer'
import { randomBytes } from 'node:crypto'
import fc from 'fast-check'
import { Webhook, WebhookVerificationError } from 'standardwebhooks'
import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest'
import { MAX_SECRET_BYTES, MIN_SECRET_BYTES, newWebhookSecret, secretKey, signedHeaders } from '../../src/webhooks/signature.ts'

/**
 * Our signatures are proven with the `standardwebhooks` package (the specification's own TypeScript
 * library), as a subscriber would check them: what it accepts and what it refuses. The package reads
 * the clock (Date.now) for its tolerance of 5 minutes, so the clock is set here.
 */

/** The specification's example: what its reference libraries compute, not what we do. */
const VECTOR = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
}

const NOW_S = 1_795_000_000
const TOLERANCE_S = 5 * 60
const secret = newWebhookSecret((n) => new Uint8Array(n).map((_, i) => (i * 37 + 11) % 256))
const body = JSON.stringify({ type: 'zone.statistics_changed', data: { country: 'GT', zone: 'Zona 7', median_ppm2_usd: 1050, previous_median_ppm2_usd: 1000 } })

/** What the package says of a delivery: its parsed body, or the reason it refuses it. */
function verdict(headers: Record<string, string>, payload: string | Buffer = body, key = secret, jsonParse = true): unknown {
  try {
    return { accepted: new Webhook(key).verify(payload, headers, { jsonParse }) }
  } catch (error) {
    expect(error).toBeInstanceOf(WebhookVerificationError)
    return { refused: (error as Error).message }
  }
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'] })
  vi.setSystemTime(NOW_S * 1000)
})
afterEach(() => vi.useRealTimers())

describe('signedHeaders, verified by the standardwebhooks package', () => {
  test('gives the specification’s example signature', () => {
    expect(signedHeaders(VECTOR.secret, VECTOR.id, VECTOR.timestamp, VECTOR.body)).toEqual({
      'webhook-id': VECTOR.id,
      'webhook-timestamp': '1614265330',
      'webhook-signature': VECTOR.signature,
    })
  })

  test('a delivery signed now is accepted, and its body read', () => {
    expect(verdict(signedHeaders(secret, 'msg_1', NOW_S, body))).toEqual({ accepted: JSON.parse(body) })
    // The same bytes handed over as bytes sign the same.
    expect(signedHeaders(secret, 'msg_1', NOW_S, Buffer.from(body))).toEqual(signedHeaders(secret, 'msg_1', NOW_S, body))
  })

  test('a changed body, id or timestamp, or another secret, is refused', () => {
    const headers = signedHeaders(secret, 'msg_1', NOW_S, body)
    const noMatch = { refused: 'No matching signature found' }
    expect(verdict(headers, body.replace('1050', '1051'))).toEqual(noMatch)
    expect(verdict(headers, `${body} `)).toEqual(noMatch)
    expect(verdict({ ...headers, 'webhook-id': 'msg_2' })).toEqual(noMatch)
    expect(verdict({ ...headers, 'webhook-timestamp': String(NOW_S - 1) })).toEqual(noMatch)
    const other = newWebhookSecret((n) => new Uint8Array(n).fill(7))
    expect(verdict(headers, body, other)).toEqual(noMatch)
    expect(verdict(signedHeaders(other, 'msg_1', NOW_S, body))).toEqual(noMatch)
  })

  test('a delivery signed longer ago than the package’s tolerance (5 minutes) is refused, one second inside it accepted; so is one from the future', () => {
    expect(verdict(signedHeaders(secret, 'msg_1', NOW_S - TOLERANCE_S, body))).toEqual({ accepted: JSON.parse(body) })
    expect(verdict(signedHeaders(secret, 'msg_1', NOW_S - TOLERANCE_S - 1, body))).toEqual({ refused: 'Message timestamp too old' })
    expect(verdict(signedHeaders(secret, 'msg_1', NOW_S + TOLERANCE_S, body))).toEqual({ accepted: JSON.parse(body) })
    expect(verdict(signedHeaders(secret, 'msg_1', NOW_S + TOLERANCE_S + 1, body))).toEqual({ refused: 'Message timestamp too new' })
  })

  test('signed with two secrets while one is rolled, either is accepted, a third is not', () => {
    const next = newWebhookSecret((n) => randomBytes(n))
    const headers = signedHeaders([secret, next], 'msg_1', NOW_S, body)
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}= v1,[A-Za-z0-9+/]{43}=$/)
    expect(verdict(headers, body, secret)).toEqual({ accepted: JSON.parse(body) })
    expect(verdict(headers, body, next)).toEqual({ accepted: JSON.parse(body) })
    expect(verdict(headers, body, newWebhookSecret((n) => randomBytes(n)))).toEqual({ refused: 'No matching signature found' })
  })

  test('ids that could be cut elsewhere in the signed text, bad timestamps and no secret are refused before signing', () => {
    for (const id of ['', 'msg.1', 'msg 1', 'x'.repeat(129), 'ñ']) expect(() => signedHeaders(secret, id, NOW_S, body), id).toThrow(/webhook id/)
    for (const at of [-1, 1.5, Number.NaN, 2 ** 53]) expect(() => signedHeaders(secret, 'msg_1', at, body), String(at)).toThrow(/timestamp/)
    expect(() => signedHeaders([], 'msg_1', NOW_S, body)).toThrow(/at least one secret/)
  })
})

describe('secrets', () => {
  test('a new secret is whsec_ and the base64 of the random bytes asked for, 32 by default, which the package takes as its key', () => {
    const bytes = randomBytes(32)
    const fresh = newWebhookSecret(() => bytes)
    expect(fresh).toBe(`whsec_${bytes.toString('base64')}`)
    expect(secretKey(fresh)).toEqual(bytes)
    expect(new Webhook(fresh).sign('msg_1', new Date(NOW_S * 1000), body)).toBe(signedHeaders(fresh, 'msg_1', NOW_S, body)['webhook-signature'])
  })

  test('from 24 to 64 bytes; other sizes, or random bytes of the wrong length, are refused', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: MIN_SECRET_BYTES, maxLength: MAX_SECRET_BYTES }), (bytes) => {
        expect(secretKey(newWebhookSecret(() => bytes, bytes.length))).toEqual(Buffer.from(bytes))
      }),
    )
    for (const size of [0, 23, 65, 32.5]) expect(() => newWebhookSecret(randomBytes, size), String(size)).toThrow(/24 to 64 bytes/)
    expect(() => newWebhookSecret(() => new Uint8Array(31))).toThrow(/got 31/)
  })

  test('a secret without its prefix, not base64, or of a wrong size is refused', () => {
    const key = randomBytes(32).toString('base64')
    for (const bad of [key, `whsec-${key}`, `whsec_${key.slice(1)}`, `whsec_${key.replace(/.$/, '*')}`]) {
      expect(() => secretKey(bad), bad).toThrow(/whsec_ followed by base64/)
    }
    for (const size of [0, 16, 23, 65]) expect(() => secretKey(`whsec_${randomBytes(size).toString('base64')}`), String(size)).toThrow(/24 to 64 bytes/)
  })
})

describe('any body', () => {
  /** Unicode of every plane, empty, and large (up to ~1 MiB). */
  const bodies = fc.oneof(
    fc.string({ unit: 'binary', maxLength: 300 }),
    fc.constant(''),
    fc.tuple(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }), fc.integer({ min: 1, max: 8_000 })).map(([text, times]) => text.repeat(times)),
  )
  const ids = fc.stringMatching(/^[A-Za-z0-9_-]{1,128}$/)

  test('is accepted as signed, as text or as its UTF-8 bytes, and refused once a character is added', () => {
    fc.assert(
      fc.property(bodies, ids, fc.integer({ min: -TOLERANCE_S, max: TOLERANCE_S }), (payload, id, skew) => {
        const headers = signedHeaders(secret, id, NOW_S + skew, payload)
        expect(signedHeaders(secret, id, NOW_S + skew, Buffer.from(payload, 'utf8'))).toEqual(headers)
        expect(verdict(headers, payload, secret, false)).toEqual({ accepted: undefined })
        expect(verdict(headers, `${payload}.`, secret, false)).toEqual({ refused: 'No matching signature found' })
      }),
      { numRuns: 150 },
    )
  })
})
