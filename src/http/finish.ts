import { Elysia } from 'elysia'
import { isPrepared } from '../shared/ready-bytes.ts'
import { type Coding, codedEtag, encoded, MIN_COMPRESSED_BYTES, negotiatedCoding, noneMatchHits, strongEtag } from './encoding.ts'

/**
 * Where every successful answer is finished, for every route on every runtime: its validator and its
 * content coding (RFC 9110). A 200 whose body is bytes or JSON gets
 *
 * - `ETag` (GET only): a strong validator of its bytes, per coding (src/http/encoding.ts); an
 *   `If-None-Match` naming it is answered `304 Not Modified` without a body, with the headers the
 *   200 would have had (X-Request-Id, the rate-limit headers, ETag, Vary);
 * - from 1 KiB on, `Vary: Accept-Encoding` and, when the client accepts one, a `br` or `gzip` body.
 *   Smaller answers go as they are, without Vary.
 *
 * Prepared answers (bytes served many times: src/shared/ready-bytes.ts `prepared`, i.e. /zones,
 * /zone/{slug}, /listings pages and the docs) keep their ETag and compressed copies beside them,
 * made once however many requests ask: a WeakMap keyed by the bytes, dropped with them. Other
 * answers are hashed and compressed per request, whole (their ETag needs every byte before the
 * headers go out), on the thread pool. Refusals and errors (answered by the gate and the error
 * plugin) are not touched: they are small and carry no validator.
 */
export function finishedAnswers() {
  // The value itself when there is nothing to finish, never undefined: Elysia 1.4's error handler
  // answers a hook's undefined as an empty body.
  return new Elysia({ name: 'finished-answers' }).mapResponse({ as: 'global' }, ({ request, set, responseValue }) =>
    // Typed as a Response: Elysia maps any value a hook returns, as it would the handler's.
    (finish(request, set as FinishedSet, responseValue) ?? responseValue) as Response | Promise<Response>,
  )
}

type FinishedSet = { status?: number | string; headers: Record<string, unknown> }
/** A body's validator and its compressed copies, made when first asked. */
type Copies = { etag: string; coded: Partial<Record<Coding, Promise<Uint8Array<ArrayBuffer>>>> }

const preparedCopies = new WeakMap<Uint8Array, Copies>()
const encoder = new TextEncoder()

/** The content types worth compressing: JSON, text, scripts. */
const COMPRESSIBLE = /^(?:application\/(?:json|javascript)|text\/)/i

function copiesOf(bytes: Uint8Array): Copies {
  if (!isPrepared(bytes)) return { etag: strongEtag(bytes), coded: {} }
  let copies = preparedCopies.get(bytes)
  if (!copies) preparedCopies.set(bytes, (copies = { etag: strongEtag(bytes), coded: {} }))
  return copies
}

/** `bytes` in `coding`, made once per copies (a failure is not kept: the next request tries again). */
function codedCopy(copies: Copies, bytes: Uint8Array, coding: Coding): Promise<Uint8Array<ArrayBuffer>> {
  const made = (copies.coded[coding] ??= encoded(bytes, coding))
  made.catch(() => copies.coded[coding] === made && delete copies.coded[coding])
  return made
}

/** A handler's answer as bytes: bytes as they are, a plain object or array as its JSON; anything else is not finished here. */
function bytesOf(value: unknown): { bytes: Uint8Array; serialised: boolean } | undefined {
  if (value instanceof Uint8Array) return { bytes: value, serialised: false }
  if (value === null || typeof value !== 'object') return undefined
  const proto = Object.getPrototypeOf(value)
  if (proto !== Object.prototype && !Array.isArray(value)) return undefined
  return { bytes: encoder.encode(JSON.stringify(value)), serialised: true }
}

/** The finished answer, or undefined to let Elysia answer `value` as it is. */
function finish(request: Request, set: FinishedSet, value: unknown): Response | Promise<Response> | undefined {
  if (set.status !== undefined && Number(set.status) !== 200) return undefined
  const body = bytesOf(value)
  if (!body) return undefined
  const { bytes, serialised } = body
  const compressible = bytes.length >= MIN_COMPRESSED_BYTES && COMPRESSIBLE.test(String(set.headers['content-type'] ?? ''))
  const coding = compressible ? negotiatedCoding(request.headers.get('accept-encoding')) : null
  if (compressible) set.headers.vary = 'Accept-Encoding'
  const copies = request.method === 'GET' || coding ? copiesOf(bytes) : undefined
  if (copies && request.method === 'GET') {
    set.headers.etag = codedEtag(copies.etag, coding)
    if (noneMatchHits(request.headers.get('if-none-match'), copies.etag)) {
      set.status = 304
      return new Response(null, { status: 304 })
    }
  }
  if (!coding || !copies) return serialised ? new Response(bytes as Uint8Array<ArrayBuffer>) : undefined
  set.headers['content-encoding'] = coding
  return codedCopy(copies, bytes, coding).then((coded) => new Response(coded))
}
