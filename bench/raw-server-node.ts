/** The baseline of Node for bench/http.ts: a bare `node:http` server answering a small JSON, no framework, no auth. */
import { createServer } from 'node:http'

const body = JSON.stringify({ ok: true, service: 'mirador' })
const server = createServer((_, response) => {
  response.writeHead(200, { 'content-type': 'application/json' })
  response.end(body)
})
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  console.log(JSON.stringify({ event: 'listening', port: (server.address() as { port: number }).port }))
})
process.on('SIGTERM', () => process.exit(0))
