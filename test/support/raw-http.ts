import { connect } from 'node:net'

export type RawResponse = { status: number; headers: Map<string, string>; body: string; raw: string }

/**
 * Sends `head` (request line and headers, CRLF-separated, without the blank line) and `body` over a
 * fresh TCP connection, byte for byte as written: no client library normalises the request target,
 * the Host header or the framing. Adds `Connection: close` and reads the answer until the server
 * closes. Only Content-Length and chunked bodies are decoded (all the server sends).
 *
 * The client half-closes its side once the request is written, unless `keepOpen`: Bun takes a
 * half-closed connection for a client that left, and drops the answer of a handler still waiting on
 * the network (a webhook ping); a client that waits for its answer keeps its side open.
 */
export function rawRequest(port: number, head: string, body = '', timeoutMs = 10_000, keepOpen = false): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const text = `${head}\r\nConnection: close\r\n\r\n${body}`
    const socket = connect(port, '127.0.0.1', () => (keepOpen ? socket.write(text) : socket.end(text)))
    const chunks: Buffer[] = []
    let failure: Error | null = null
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      socket.destroy(new Error(`no complete answer in ${timeoutMs} ms to ${JSON.stringify(head.slice(0, 200))}`))
    }, timeoutMs)
    socket.on('data', (chunk) => chunks.push(chunk))
    // A server may answer before it has read the whole body (a 401 to a large upload) and close:
    // writing the rest then fails (EPIPE, ECONNRESET), but the answer was given, as a client sees it.
    socket.on('error', (error) => {
      failure = error
    })
    socket.on('close', () => {
      clearTimeout(timer)
      if (timedOut) return reject(failure)
      try {
        resolve(parseResponse(Buffer.concat(chunks)))
      } catch (error) {
        reject(failure ?? error)
      }
    })
  })
}

/** The answer in `bytes`: chunk sizes count bytes, so the body is de-chunked before it is decoded as UTF-8. */
function parseResponse(bytes: Buffer): RawResponse {
  const raw = bytes.toString('utf8')
  const end = bytes.indexOf('\r\n\r\n')
  if (end < 0) throw new Error(`no HTTP response: ${JSON.stringify(raw.slice(0, 200))}`)
  const [statusLine, ...lines] = bytes.subarray(0, end).toString('utf8').split('\r\n')
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine!)?.[1])
  const headers = new Map(lines.map((line) => [line.slice(0, line.indexOf(':')).trim().toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]))
  let body = bytes.subarray(end + 4)
  if (headers.get('transfer-encoding') === 'chunked') {
    const decoded: Buffer[] = []
    for (let at = 0; ; ) {
      const lineEnd = body.indexOf('\r\n', at)
      const size = Number.parseInt(body.subarray(at, lineEnd).toString('latin1'), 16)
      if (!size) break
      decoded.push(body.subarray(lineEnd + 2, lineEnd + 2 + size))
      at = lineEnd + 2 + size + 2
    }
    body = Buffer.concat(decoded)
  }
  return { status, headers, body: body.toString('utf8'), raw }
}
