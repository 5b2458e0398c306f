/**
 * Server entry (Bun, `npm start`): `Bun.serve` for the API and the operator socket; the start-up
 * itself is src/server.ts, the same on every runtime.
 */
import type { RuntimeEdge } from './runtime/edge.ts'
import { runServer } from './server.ts'

const bun: RuntimeEdge = {
  runtime: 'bun',
  async listen({ port, hostname, handler, failed, idleSeconds }) {
    const server = Bun.serve({
      port,
      hostname,
      development: false,
      // Without this, production mode shares the port with any other process (SO_REUSEPORT).
      reusePort: false,
      // Bodies of any size reach the API, which answers 413 payload_too_large as JSON above 16 KiB.
      maxRequestBodySize: Number.MAX_SAFE_INTEGER,
      // Bun closes a connection silent for 10 s by default, even one waiting for its answer.
      idleTimeout: idleSeconds,
      fetch: handler,
      error: failed,
    })
    return { port: server.port ?? port, stop: () => server.stop() }
  },
  async listenUnix(path, handler) {
    const server = Bun.serve({ unix: path, fetch: handler })
    return { stop: () => server.stop(true) }
  },
}

await runServer(bun)
