/**
 * Server entry (Node ≥ 22, `npm run start:node`): `node:http` for the API and the operator socket,
 * each request turned into a web `Request` for the same handler Bun and Deno call; the start-up itself
 * is src/server.ts, the same on every runtime.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { Readable } from 'node:stream'
import type { Handler, RuntimeEdge } from './runtime/edge.ts'
import { runServer } from './server.ts'

function requestOf(incoming: IncomingMessage): Request {
  const headers = new Headers()
  const raw = incoming.rawHeaders
  for (let i = 0; i < raw.length; i += 2) headers.append(raw[i]!, raw[i + 1]!)
  const method = incoming.method ?? 'GET'
  const body = method === 'GET' || method === 'HEAD' ? null : (Readable.toWeb(incoming) as unknown as BodyInit)
  // `duplex` is required by Node's fetch for a streamed body (not yet in the DOM types).
  const init = { method, headers, body, duplex: 'half' } as RequestInit
  // Without a usable Host the URL is not http://… and the app refuses it (src/app.ts), as on Bun.
  const host = incoming.headers.host
  try {
    if (host) return new Request(`http://${host}${incoming.url}`, init)
  } catch {}
  return new Request(`no-host:${incoming.url}`, init)
}

/**
 * Writes `response` to `out`: the API's answers whole (one write, with Content-Length), the operator
 * socket's streamed (its progress lines go out as they come).
 */
async function send(response: Response, out: ServerResponse, stream: boolean): Promise<void> {
  out.statusCode = response.status
  response.headers.forEach((value, name) => name !== 'set-cookie' && out.setHeader(name, value))
  const cookies = response.headers.getSetCookie()
  if (cookies.length > 0) out.setHeader('set-cookie', cookies)
  if (!response.body) return void out.end()
  if (!stream) return void out.end(Buffer.from(await response.arrayBuffer()))
  const reader = response.body.getReader()
  out.once('close', () => void reader.cancel().catch(() => {}))
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
    if (!out.write(chunk.value) && !out.destroyed) await new Promise((resume) => out.once('drain', resume).once('close', resume))
  }
  out.end()
}

/** A server calling `handler`; `failed` answers when it throws (without it the connection is dropped). */
function serve(handler: Handler, { failed, stream }: { failed?: (error: Error) => Response; stream: boolean }): Server {
  return createServer((incoming, out) => {
    void (async () => {
      let response: Response
      try {
        response = await handler(requestOf(incoming))
      } catch (error) {
        if (!failed) throw error
        response = failed(error instanceof Error ? error : new Error(String(error)))
      }
      await send(response, out, stream)
    })().catch(() => out.destroy())
  })
}

const started = (server: Server, listen: (ready: () => void) => void) =>
  new Promise<void>((ready, refuse) => {
    server.once('error', refuse)
    listen(() => {
      server.off('error', refuse)
      ready()
    })
  })

/** Stops accepting, closes idle keep-alive connections (Node's close does), waits for the rest. */
const closed = (server: Server) => new Promise<void>((done) => server.close(() => done()))

const node: RuntimeEdge = {
  runtime: 'node',
  async listen({ port, hostname, handler, failed }) {
    const server = serve(handler, { failed, stream: false })
    await started(server, (ready) => server.listen(port, hostname, ready))
    return { port: (server.address() as { port: number }).port, stop: () => closed(server) }
  },
  async listenUnix(path, handler) {
    const server = serve(handler, { stream: true })
    await started(server, (ready) => server.listen(path, ready))
    return {
      stop() {
        const done = closed(server)
        server.closeAllConnections()
        return done
      },
    }
  },
}

await runServer(node)
