/**
 * The baseline of issue 34's per-answer goal: a bare `Bun.serve` doing the same work as Mirador for a
 * data answer that is ready in memory (`GET /zones`, `/zone/{slug}`, a `/listings` page), and nothing
 * else (bench/same-work.ts): the key, the counter and its headers, a request id, and the bytes of the
 * real answer with the headers it carried. An unknown path is a 404, an unknown key a 401. The gap
 * between the two is what the framework and our own per-request work cost.
 *
 *   PORT=0 MIRADOR=http://127.0.0.1:3000 KEY=mk_… PATHS='/api/v1/zones?country=GT,…' bun bench/raw-same-work.ts
 */
import { countedHeaders, INVALID_KEY, readyAnswers } from './same-work.ts'

const answers = await readyAnswers()
const refusal = (status: number, body: object) => Response.json(body, { status })

const server = Bun.serve({
  hostname: '127.0.0.1',
  port: Number(process.env.PORT ?? 0),
  fetch(request) {
    const counted = countedHeaders(request.headers.get('authorization'))
    if (!counted) return refusal(401, INVALID_KEY)
    const url = request.url
    const ready = answers.get(url.slice(url.indexOf('/', 8)))
    if (!ready) return refusal(404, { ok: false, error: 'not_found', message: 'not_found' })
    return new Response(ready.bytes, { headers: { ...ready.headers, ...counted } })
  },
})
console.log(JSON.stringify({ event: 'listening', port: server.port }))
process.on('SIGTERM', () => {
  void server.stop(true)
  process.exit(0)
})
