import { Buffer } from 'node:buffer'
import { createHmac } from 'node:crypto'

/**
 * How webhook deliveries are signed (issue 31), per the Standard Webhooks specification: three
 * headers, `webhook-id` (the delivery's id, the same on every retry: receivers deduplicate by it),
 * `webhook-timestamp` (whole seconds since 1970, when this attempt was signed) and
 * `webhook-signature`: `v1,` + base64 of HMAC-SHA256 over `${id}.${timestamp}.${body}` with the
 * secret's bytes. A secret is `whsec_` + base64 of 24 to 64 random bytes.
 *
 * Written on node:crypto (Bun, Node and Deno all have it) rather than taken from the
 * `standardwebhooks` package: signing is ten lines, and the specs verify these signatures with the
 * package itself (test/webhooks/signature.test.ts), which is the proof a receiver needs; a receiver
 * that uses any Standard Webhooks library accepts them. The package stays a devDependency.
 *
 * Pure apart from the HMAC: the random bytes of a new secret and the time come in as arguments.
 */

export const SECRET_PREFIX = 'whsec_'
/** The bytes a secret may have: 24 to 64 (the specification's bounds); new ones have 32. */
export const MIN_SECRET_BYTES = 24
export const MAX_SECRET_BYTES = 64
export const NEW_SECRET_BYTES = 32

/**
 * A delivery's id: letters, digits, `_` and `-`, 1 to 128 (a UUID, `msg_…`). No `.`: the signed text
 * joins id, timestamp and body with dots, so an id with one could be cut elsewhere.
 */
export const WEBHOOK_ID_PATTERN = /^[A-Za-z0-9_-]{1,128}$/

export type WebhookHeaders = {
  'webhook-id': string
  'webhook-timestamp': string
  'webhook-signature': string
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

/** A new secret from `random(n)`, which returns n random bytes (`crypto.randomBytes` in production). */
export function newWebhookSecret(random: (size: number) => Uint8Array, size: number = NEW_SECRET_BYTES): string {
  if (!Number.isInteger(size) || size < MIN_SECRET_BYTES || size > MAX_SECRET_BYTES) {
    throw new RangeError(`a webhook secret has ${MIN_SECRET_BYTES} to ${MAX_SECRET_BYTES} bytes, not ${size}`)
  }
  const bytes = random(size)
  if (bytes.length !== size) throw new RangeError(`asked for ${size} random bytes, got ${bytes.length}`)
  return SECRET_PREFIX + Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64')
}

/** The key bytes of a secret `whsec_…`; anything else (no prefix, not base64, too short or long) throws. */
export function secretKey(secret: string): Buffer {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : null
  if (encoded === null || !BASE64.test(encoded)) throw new TypeError('a webhook secret is whsec_ followed by base64')
  const key = Buffer.from(encoded, 'base64')
  if (key.length < MIN_SECRET_BYTES || key.length > MAX_SECRET_BYTES) {
    throw new RangeError(`a webhook secret has ${MIN_SECRET_BYTES} to ${MAX_SECRET_BYTES} bytes, this one ${key.length}`)
  }
  return key
}

/** `v1,` + base64 HMAC-SHA256 of `${id}.${timestamp}.${body}` under `key`; the body's bytes as they are sent. */
function signature(key: Buffer, id: string, timestampSeconds: number, body: string | Uint8Array): string {
  return `v1,${createHmac('sha256', key).update(`${id}.${timestampSeconds}.`).update(body).digest('base64')}`
}

/**
 * The headers of a delivery of `body` (the exact bytes sent; a string is sent as UTF-8) with id `id`,
 * signed at `timestampSeconds`. Several secrets (while one is being rolled) give one signature each,
 * separated by spaces, as the specification has it: a receiver that knows either accepts it.
 */
export function signedHeaders(secrets: string | readonly string[], id: string, timestampSeconds: number, body: string | Uint8Array): WebhookHeaders {
  if (!WEBHOOK_ID_PATTERN.test(id)) throw new TypeError(`a webhook id is 1 to 128 letters, digits, _ or -, not ${JSON.stringify(id)}`)
  if (!Number.isSafeInteger(timestampSeconds) || timestampSeconds < 0) throw new RangeError(`a webhook timestamp is whole seconds ≥ 0, not ${timestampSeconds}`)
  const keys = (typeof secrets === 'string' ? [secrets] : secrets).map(secretKey)
  if (keys.length === 0) throw new TypeError('a delivery is signed with at least one secret')
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': keys.map((key) => signature(key, id, timestampSeconds, body)).join(' '),
  }
}

/**
 * A subscription's secret, never stored (decision 0112): `whsec_` + base64 of HMAC-SHA256(signing
 * key, subscription id), 32 bytes. Every process with the same signing key signs with the same
 * secret, and a leaked table or event log reveals none.
 */
export const derivedSecret = (signingKey: string, webhookId: string): string =>
  SECRET_PREFIX + createHmac('sha256', signingKey).update(webhookId).digest('base64')
