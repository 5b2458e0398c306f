import { echo, fail, invalidRequest } from '../shared/errors.ts'
import { unbounded } from '../runtime/dependency.ts'

/** The largest request body the API reads (DESIGN: 413 payload_too_large above 16 KiB). */
export const MAX_BODY_BYTES = 16 * 1024

const JSON_TYPE = /^application\/json\s*(;|$)/i

/** The client closed the connection before its body arrived: not a server error, and nobody to answer. */
export class ClientAborted extends Error {
  constructor() {
    super('the client closed the connection before the request body was complete')
    this.name = 'ClientAborted'
  }
}

/** The refusal of a body over MAX_BODY_BYTES. */
export const payloadTooLarge = () =>
  fail.payloadTooLarge(`the body is over ${MAX_BODY_BYTES} bytes (16 KiB), the limit for a request body`)

/** How much of a body the API did not read it still reads and discards before answering, and for how long. */
export const DISCARD_LIMIT = { bytes: 8 * 1024 * 1024, ms: 2000 }

/**
 * Reads and discards what is left of a body the API answered without reading (a 401, 404 or 413 to an
 * upload), up to DISCARD_LIMIT. Closing a connection with unread bytes makes the kernel reset it, and
 * a client still sending then loses the answer it was given (Go's net/http and nginx's lingering close
 * guard against the same). A declared body over the limit is not read: that client may see a reset.
 */
export async function discardUnreadBody(request: Request): Promise<void> {
  if (request.bodyUsed || !request.body) return
  if (Number(request.headers.get('content-length') ?? 0) > DISCARD_LIMIT.bytes) return
  const reader = request.body.getReader()
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), DISCARD_LIMIT.ms)
  })
  try {
    for (let read = 0; read <= DISCARD_LIMIT.bytes; ) {
      const chunk = await Promise.race([reader.read(), late])
      if (chunk === 'late' || chunk.done) break
      read += chunk.value.byteLength
    }
  } catch {
    // The client went away: nothing left to protect.
  } finally {
    clearTimeout(timer)
    void reader.cancel().catch(() => {})
  }
}

/**
 * Reads at most MAX_BODY_BYTES of the body: a declared Content-Length above it is refused before
 * anything is read, a longer chunked body as soon as it passes the limit.
 */
async function readLimited(request: Request): Promise<Uint8Array> {
  if (Number(request.headers.get('content-length') ?? 0) > MAX_BODY_BYTES) throw payloadTooLarge()
  if (!request.body) return new Uint8Array()
  const reader = request.body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      size += value.byteLength
      if (size > MAX_BODY_BYTES) {
        await reader.cancel()
        throw payloadTooLarge()
      }
      chunks.push(value)
    }
  } catch (error) {
    if (request.signal.aborted || (error instanceof Error && error.name === 'AbortError')) throw new ClientAborted()
    throw error
  }
  const bytes = new Uint8Array(size)
  let offset = 0
  for (const chunk of chunks) {
    bytes.set(chunk, offset)
    offset += chunk.byteLength
  }
  return bytes
}

/**
 * The JSON body of a gated route, read here rather than by Elysia (gated routes never let Elysia
 * parse), so that the gate always runs first and each failure has a precise error:
 * content type (400) → size (413) → UTF-8 (400) → JSON (400).
 */
export async function readJsonBody(request: Request): Promise<unknown> {
  const type = request.headers.get('content-type') ?? ''
  if (!JSON_TYPE.test(type)) {
    throw invalidRequest(`the body must be JSON sent with "Content-Type: application/json"${type ? `, not ${echo(type)}` : ''}`, [
      { field: 'content-type', message: 'Expected application/json' },
    ])
  }
  // The client's upload is its time, not the request's: the bound on dependencies begins once it is read.
  const bytes = await unbounded(() => readLimited(request))
  let text: string
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes)
  } catch {
    throw invalidRequest('the body is not valid UTF-8', [{ field: 'body', message: 'Expected UTF-8 text' }])
  }
  if (!text.trim()) throw invalidRequest('the body is empty; send a JSON object', [{ field: 'body', message: 'Expected a JSON object' }])
  try {
    return JSON.parse(text)
  } catch (error) {
    const reason = error instanceof SyntaxError ? echo(error.message) : 'malformed JSON'
    throw invalidRequest(`the body is not valid JSON: ${reason}`, [{ field: 'body', message: 'Malformed JSON' }])
  }
}
