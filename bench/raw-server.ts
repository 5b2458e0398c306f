/** The baseline for bench/ratelimit.ts: a bare `Bun.serve` answering a small JSON, no framework, no auth. */
const server = Bun.serve({
  hostname: '127.0.0.1',
  port: Number(process.env.PORT ?? 0),
  fetch: () => Response.json({ ok: true, service: 'mirador' }),
})
console.log(JSON.stringify({ event: 'listening', port: server.port }))
process.on('SIGTERM', () => {
  void server.stop(true)
  process.exit(0)
})
