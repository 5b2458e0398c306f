/**
 * The little that differs between runtimes, one implementation per runtime (src/main.ts,
 * src/main-node.ts, src/main-deno.ts); everything else about serving is the shared start-up
 * (src/server.ts), the same on each.
 */

/** How every runtime's server calls the API: a request in, a response out. */
export type Handler = (request: Request) => Response | Promise<Response>

/** A listening server; `stop` stops accepting, lets requests in progress finish, then closes. */
export type Listening = { stop(): Promise<void> }

export type RuntimeEdge = {
  /** `bun`, `node` or `deno`, as the start-up log says. */
  runtime: string
  /**
   * Listens on TCP (request bodies of any size reach `handler`; the API refuses large ones itself).
   * `failed` answers a request whose handler threw. Throws an error with `code: 'EADDRINUSE'` when
   * the port is taken. `idleSeconds`: how long a silent connection stays open, where the runtime
   * closes them by itself (Bun); Node and Deno keep them open until the answer.
   */
  listen(options: { port: number; hostname: string; handler: Handler; failed(error: Error): Response; idleSeconds?: number }): Promise<Listening & { port: number }>
  /** Serves `handler` on a Unix socket created at `path`; its `stop` also closes connections in progress. */
  listenUnix(path: string, handler: Handler): Promise<Listening>
  /**
   * A full garbage collection now, where the runtime offers one without a start flag (Bun): an export
   * asks for it as it goes (decision 0121). Absent on Node and Deno.
   */
  collectGarbage?(): void
}
