/** The baseline of Deno for bench/http.ts: a bare `Deno.serve` answering a small JSON, no framework, no auth. */
declare const Deno: {
  serve(options: { port: number; hostname: string; onListen(addr: { port: number }): void }, handler: () => Response): unknown
  env: { get(name: string): string | undefined }
  addSignalListener(signal: 'SIGTERM', handler: () => void): void
  exit(code: number): never
}

Deno.serve(
  { port: Number(Deno.env.get('PORT') ?? 0), hostname: '127.0.0.1', onListen: ({ port }) => console.log(JSON.stringify({ event: 'listening', port })) },
  () => Response.json({ ok: true, service: 'mirador' }),
)
Deno.addSignalListener('SIGTERM', () => Deno.exit(0))
