/**
 * Server entry (Deno, `npm run start:deno`): `Deno.serve` for the API and the operator socket; the
 * start-up itself is src/server.ts, the same on every runtime.
 */
import type { Handler, RuntimeEdge } from './runtime/edge.ts'
import { runServer } from './server.ts'

/** The part of Deno's `Deno.serve` used here (the project type-checks with Bun's and Node's types). */
type DenoServer = { addr: { port?: number }; shutdown(): Promise<void>; finished: Promise<void> }
type DenoServeOptions = ({ port: number; hostname: string } | { transport: 'unix'; path: string }) & {
  signal?: AbortSignal
  onListen?: () => void
  onError?: (error: unknown) => Response | Promise<Response>
}
declare const Deno: {
  serve(options: DenoServeOptions, handler: Handler): DenoServer
  errors: { AddrInUse: new () => Error }
}

const deno: RuntimeEdge = {
  runtime: 'deno',
  async listen({ port, hostname, handler, failed }) {
    let server: DenoServer
    try {
      // onListen: without it Deno prints its own "Listening on" line.
      server = Deno.serve({ port, hostname, onListen: () => {}, onError: (error) => failed(error instanceof Error ? error : new Error(String(error))) }, handler)
    } catch (error) {
      if (error instanceof Deno.errors.AddrInUse) Object.assign(error, { code: 'EADDRINUSE' })
      throw error
    }
    return { port: server.addr.port ?? port, stop: () => server.shutdown() }
  },
  async listenUnix(path, handler) {
    // Aborting closes connections in progress too (a command's stream), which shutdown() waits for.
    const abort = new AbortController()
    const server = Deno.serve({ transport: 'unix', path, signal: abort.signal, onListen: () => {} }, handler)
    return {
      stop() {
        abort.abort()
        return server.finished
      },
    }
  },
}

await runServer(deno)
