/**
 * Server entry (Bun, `npm start`): `Bun.serve` for the API and the operator socket; the start-up
 * itself is src/server.ts, the same on every runtime.
 */
import { loadConfig } from './config.ts'
import { pgliteModule } from './db/pglite-module.ts'
import type { RuntimeEdge } from './runtime/edge.ts'

// An embedded store's PGlite module compiles (0.3 s, mostly off this thread) while the server's own
// modules load (decision 0124); a configuration error is the server's to report.
try {
  if (!loadConfig(process.env).databaseUrl) void pgliteModule()
} catch {}
const { runServer } = await import('./server.ts')

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
      async fetch(request, server) {
        const response = await handler(request)
        // Bun (1.4.4) also closes a connection after the idle timeout while a streamed answer is still
        // flowing: an export of 697,000 listings was cut after the 50 s. An export (the only answer with
        // a Mirador-Cursor header and a streamed body) is paced by its client instead: its reads stop
        // when the client stops taking them.
        if (response.headers.has('mirador-cursor')) server.timeout(request, 0)
        return response
      },
      error: failed,
    })
    return { port: server.port ?? port, stop: () => server.stop() }
  },
  async listenUnix(path, handler) {
    const server = Bun.serve({ unix: path, fetch: handler })
    return { stop: () => server.stop(true) }
  },
  collectGarbage: () => Bun.gc(true),
}

await runServer(bun)
