import { createHash } from 'node:crypto'
import { promisify } from 'node:util'
import { brotliCompress, constants, gzip } from 'node:zlib'

/**
 * Content negotiation of answers (RFC 9110 §12.5.3) and their validators (§8.8.3), runtime-neutral:
 * node:zlib and node:crypto exist on Bun, Node and Deno. Compression runs on the runtime's thread
 * pool (the callback forms), never on the event loop. src/http/finish.ts applies them to every answer.
 */

/** The content codings the API answers in, the server's preference first when the client weighs them equally. */
export const CODINGS = ['br', 'gzip'] as const
export type Coding = (typeof CODINGS)[number]

/** Answers smaller than this are sent as they are: compressing them saves less than it costs. */
export const MIN_COMPRESSED_BYTES = 1024

/**
 * Brotli quality 5 and gzip level 6: 404 KB and 462 KB for the 1.7 MB docs bundle in 90 and 75 ms,
 * where quality 11 gains 11 % more for 4.4 s (docs/decisions/0098-compression-and-etags.md).
 */
const BROTLI_QUALITY = 5
const GZIP_LEVEL = 6

const brotli = promisify(brotliCompress)
const gzipped = promisify(gzip)

/** `bytes` in `coding`, compressed on the thread pool. */
export async function encoded(bytes: Uint8Array, coding: Coding): Promise<Uint8Array<ArrayBuffer>> {
  if (coding === 'gzip') return new Uint8Array(await gzipped(bytes, { level: GZIP_LEVEL }))
  const params = {
    [constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY,
    [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
    [constants.BROTLI_PARAM_SIZE_HINT]: bytes.length,
  }
  return new Uint8Array(await brotli(bytes, { params }))
}

/** A weight (`q=`) as RFC 9110 writes it: 0 to 1 with at most three decimals; anything else is not one. */
const QVALUE = /^(?:0(?:\.\d{0,3})?|1(?:\.0{0,3})?)$/

/** Each coding an Accept-Encoding header names, lower-cased, with its weight (a malformed member is ignored). */
function weights(header: string): Map<string, number> {
  const named = new Map<string, number>()
  for (const member of header.split(',')) {
    const [name, ...parameters] = member.split(';').map((part) => part.trim())
    if (!name) continue
    let q = 1
    let malformed = false
    for (const parameter of parameters) {
      const [key, value] = parameter.split('=').map((part) => part.trim())
      if (key?.toLowerCase() !== 'q') continue
      if (value === undefined || !QVALUE.test(value)) malformed = true
      else q = Number(value)
    }
    const coding = name.toLowerCase() === 'x-gzip' ? 'gzip' : name.toLowerCase()
    if (!malformed) named.set(coding, Math.max(q, named.get(coding) ?? 0))
  }
  return named
}

/**
 * The coding to answer in for an `Accept-Encoding` header, among `offered` (every coding the API has,
 * unless a streamed answer offers fewer), or null for the body as it is: the
 * acceptable coding (q > 0) of highest weight, `br` before `gzip` at equal weight; `*` weighs every
 * coding the header does not name. Identity wins when the header weighs it more than both
 * (`identity, gzip;q=0.5`); unnamed, it is what is left when no coding is acceptable. No header:
 * identity (a client that sends none may decode nothing). When the header refuses identity and
 * names nothing the server has, the body goes as it is all the same (RFC 9110 allows it; a 406
 * would help nobody).
 */
export function negotiatedCoding(header: string | null, offered: readonly Coding[] = CODINGS): Coding | null {
  if (!header) return null
  const named = weights(header)
  const any = named.get('*')
  const weightOf = (coding: string) => named.get(coding) ?? any ?? 0
  let best: Coding | null = null
  let bestWeight = 0
  for (const coding of offered) {
    const weight = weightOf(coding)
    if (weight > bestWeight) [best, bestWeight] = [coding, weight]
  }
  // Identity is acceptable unless excluded, but weighs against a coding only when the header weighs it.
  return best && bestWeight >= weightOf('identity') ? best : null
}

/**
 * A strong validator of `bytes`: 128 bits of their SHA-256, in base64url. Computed once per
 * prepared answer (src/http/finish.ts), per request for the others.
 */
export const strongEtag = (bytes: Uint8Array): string => `"${createHash('sha256').update(bytes).digest('base64url').slice(0, 22)}"`

/** The ETag of `identity`'s representation in `coding`: another strong validator (its bytes differ), tagged like Apache's. */
export const codedEtag = (identity: string, coding: Coding | null): string => (coding ? `${identity.slice(0, -1)}-${coding}"` : identity)

/**
 * Whether `If-None-Match` matches the answer whose identity ETag is `identity`: `*`, or any listed
 * tag, weak or strong (the weak comparison §13.1.2 asks for), naming it in any of its codings.
 */
export function noneMatchHits(header: string | null, identity: string): boolean {
  if (!header) return false
  if (header.trim() === '*') return true
  const tags = header.match(/(?:W\/)?"[^"]*"/g) ?? []
  const variants = new Set([identity, ...CODINGS.map((coding) => codedEtag(identity, coding))])
  return tags.some((tag) => variants.has(tag.replace(/^W\//, '')))
}
