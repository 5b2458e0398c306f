import { promises as dns } from 'node:dns'
import { addressRefusal } from './addresses.ts'
import { isLocal, literalAddress, type TargetOptions, targetProblem } from './target.ts'

export { addressRefusal, isPublicAddress } from './addresses.ts'
export { assertTarget, checkTarget, MAX_URL_LENGTH, type TargetOptions } from './target.ts'

/**
 * The outbound side of webhooks (decision 0112): one POST to a subscriber's URL, after checking
 * every address its name resolves to, without following a redirect, within a deadline, reading at
 * most 64 KiB of the answer. Plain WHATWG `fetch` and `node:dns`, which Bun, Node and Deno all have.
 * A refusal is an outcome, never a request sent: the caller records it with the delivery.
 *
 * The window left open, DNS rebinding: the addresses checked are those `lookup` answered, but fetch
 * resolves the name again on its own and connects wherever that second answer points. A name whose
 * owner answers a public address to the first question and 10.0.0.1 or 169.254.169.254 to the second
 * (a zero TTL, or alternating servers) passes the check and reaches the private address. What would
 * close it: connecting to the very address checked, with the name sent in the Host header and the TLS
 * SNI and the certificate verified against the name; fetch cannot be told which address to connect
 * to on every runtime (Node needs an undici dispatcher, Bun and Deno their own options), so it is not
 * done here; an egress proxy that applies the same rule to the address it connects to would close it
 * too. What narrows it meanwhile: in production (`allowHttp` false) the connection is TLS and the
 * certificate must be valid for the subscriber's name, so a rebound connection to an internal
 * service fails its handshake before any byte of the request is sent (a metadata service speaks no
 * TLS at all); what remains is the connection attempt itself (a SYN and a ClientHello to the internal
 * address and port), whose outcome (`unreachable`, its reason) tells the subscriber whether something
answered there: a worker that shows reasons to subscribers may want to show the kind only.
 * Bun and Deno also honour HTTPS_PROXY: behind a proxy, the proxy connects, and must be trusted.
 */

/** One answer of a resolver: an address as text and its family. */
export type LookupAnswer = { address: string; family: number }
/** Resolves a host name to every address it has (A and AAAA). */
export type Lookup = (hostname: string) => Promise<readonly LookupAnswer[]>

/** The system resolver, as fetch will use it: every address, A and AAAA. */
export const systemLookup: Lookup = (hostname) => dns.lookup(hostname, { all: true })

export type OutboundRequest = {
  /** The body sent, usually JSON text. */
  body: string | Uint8Array<ArrayBuffer>
  /** Headers added to (or replacing) content-type application/json and the user agent: the signature, webhook-id… */
  headers?: Record<string, string>
}

/** The HTTP client: the global fetch, or in tests one that routes a name to a local receiver. */
export type Fetch = (url: URL, init: RequestInit) => Promise<Response>

export type DeliveryOptions = TargetOptions & {
  /** The resolver checked before connecting (default: node:dns, every A and AAAA answer). */
  lookup?: Lookup
  /** A clock in milliseconds, for `ms` (default: performance.now). */
  now?: () => number
  /** The deadline of the whole delivery, lookup and answer included (default 5000 ms). */
  timeoutMs?: number
  /** The HTTP client (default: the global fetch); always called with redirect 'manual' and the deadline's signal. */
  fetch?: Fetch
}

/**
 * What became of a delivery. `ms` runs from the start of the delivery (the lookup included) to the
 * answer's status and headers; `body` is at most the first 64 KiB of a refusal's answer, as UTF-8 text.
 */
export type DeliveryOutcome =
  | { kind: 'delivered'; status: number; ms: number }
  | { kind: 'rejected'; status: number; ms: number; body: string }
  | { kind: 'redirected'; status: number; location: string | null }
  | { kind: 'refused'; reason: string }
  | { kind: 'unreachable'; reason: string }
  | { kind: 'timeout' }

export const DEFAULT_TIMEOUT_MS = 5000
/** How much of an answer's body is read; the rest is cancelled unread. */
export const MAX_ANSWER_BYTES = 64 * 1024
const USER_AGENT = 'Mirador-Webhooks/1'
const MAX_REASON = 300

/** An error as one short line: its message and those of its causes (fetch hides the system's error in `cause`). */
function describe(error: unknown): string {
  const parts: string[] = []
  for (let current: unknown = error, depth = 0; current !== undefined && current !== null && depth < 3; depth++) {
    const { message, code, cause } = current as { message?: unknown; code?: unknown; cause?: unknown }
    const said = typeof message === 'string' ? message : String(current)
    const text = typeof code === 'string' && !said.includes(code) ? `${code} ${said}` : said
    if (text && !parts.includes(text)) parts.push(text)
    current = typeof current === 'object' ? cause : undefined
  }
  const line = parts.join(': ').replace(/\s+/g, ' ').trim()
  return line.length > MAX_REASON ? `${line.slice(0, MAX_REASON)}…` : line
}

/** `promise`, or the signal's reason as soon as it aborts (a lookup cannot be cancelled, only left behind). */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(signal.reason)
    if (signal.aborted) return abort()
    signal.addEventListener('abort', abort, { once: true })
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', abort))
  })
}

/** The outcome that stops a delivery before it connects (a name that does not resolve, or to a refused address), or null to go on. */
async function resolution(hostname: string, options: DeliveryOptions, signal: AbortSignal): Promise<DeliveryOutcome | null> {
  if (literalAddress(hostname) !== null) return null // judged with the URL
  let answers: readonly LookupAnswer[]
  try {
    answers = await untilAborted((options.lookup ?? systemLookup)(hostname), signal)
  } catch (error) {
    if (signal.aborted) throw error
    return { kind: 'unreachable', reason: `${hostname} did not resolve: ${describe(error)}` }
  }
  if (answers.length === 0) return { kind: 'unreachable', reason: `${hostname} resolved to no address` }
  for (const { address } of answers) {
    const refusal = addressRefusal(address, isLocal(options))
    if (refusal) return { kind: 'refused', reason: `${hostname} resolves to ${address}, ${refusal}` }
  }
  return null
}

/** At most `limit` bytes of a body, as UTF-8 text (a character cut at the limit dropped); the rest cancelled unread. */
async function firstBytes(body: ReadableStream<Uint8Array> | null, limit: number): Promise<string> {
  if (!body) return ''
  const reader = body.getReader()
  const decoder = new TextDecoder()
  let text = ''
  let size = 0
  try {
    while (size < limit) {
      const { done, value } = await reader.read()
      if (done) break
      const kept = value.subarray(0, limit - size)
      size += kept.length
      text += decoder.decode(kept, { stream: true })
    }
  } catch {
    // The deadline or the connection ended the body: what was read is what there is.
  } finally {
    void reader.cancel().catch(() => {})
  }
  return text
}

/** The outcome of an answer: its body cancelled unread, but for a refusal's first 64 KiB. */
async function outcomeOf(response: Response, ms: number): Promise<DeliveryOutcome> {
  const { status } = response
  if (response.type === 'opaqueredirect' || (status >= 300 && status < 400)) {
    void response.body?.cancel().catch(() => {})
    return { kind: 'redirected', status, location: response.headers.get('location') }
  }
  if (status >= 200 && status < 300) {
    void response.body?.cancel().catch(() => {})
    return { kind: 'delivered', status, ms }
  }
  return { kind: 'rejected', status, ms, body: await firstBytes(response.body, MAX_ANSWER_BYTES) }
}

/**
 * POSTs `request` to `target`, a webhook's URL: checked again as at subscription (`checkTarget`),
 * its name resolved and every address judged (refused without connecting if one is not allowed),
 * then sent with fetch, redirect 'manual' (a 3xx is reported, never followed) and one deadline for
 * the whole delivery. Never throws for what the network or the receiver does; throws only for a
 * programming error (a header name or value fetch refuses).
 */
export async function deliver(target: string, request: OutboundRequest, options: DeliveryOptions): Promise<DeliveryOutcome> {
  const problem = targetProblem(target, options)
  if (problem !== null) return { kind: 'refused', reason: problem }
  const url = new URL(target)
  const headers = new Headers({ 'content-type': 'application/json', 'user-agent': USER_AGENT })
  for (const [name, value] of Object.entries(request.headers ?? {})) headers.set(name, value)
  const now = options.now ?? (() => performance.now())
  const started = now()
  const signal = AbortSignal.timeout(options.timeoutMs ?? DEFAULT_TIMEOUT_MS)
  try {
    const stopped = await resolution(url.hostname, options, signal)
    if (stopped) return stopped
    const response = await (options.fetch ?? fetch)(url, { method: 'POST', headers, body: request.body, redirect: 'manual', signal })
    return await outcomeOf(response, Math.max(0, Math.round(now() - started)))
  } catch (error) {
    if (signal.aborted) return { kind: 'timeout' }
    return { kind: 'unreachable', reason: describe(error) }
  }
}
