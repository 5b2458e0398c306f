/**
 * bench/raw-same-work.ts's work done by a minimal Elysia app: one GET route per path, no hooks, the
 * same key, counter and headers, request id and bytes of the real answer (bench/same-work.ts). Beside
 * the raw server it shows what Elysia itself costs per answer; beside Mirador, what our own hooks and
 * per-request work cost. The paths must differ by more than their query.
 *
 *   PORT=0 MIRADOR=http://127.0.0.1:3000 KEY=mk_… PATHS='/api/v1/zones?country=GT,…' bun bench/raw-same-work-elysia.ts
 */
import { Elysia } from 'elysia'
import { countedHeaders, INVALID_KEY, readyAnswers } from './same-work.ts'

const app = new Elysia()
for (const [path, ready] of await readyAnswers()) {
  app.get(new URL(path, 'http://x').pathname, ({ request, set, status }) => {
    const counted = countedHeaders(request.headers.get('authorization'))
    if (!counted) return status(401, INVALID_KEY)
    Object.assign(set.headers, ready.headers, counted)
    return ready.bytes
  })
}
app.listen({ hostname: '127.0.0.1', port: Number(process.env.PORT ?? 0) })
console.log(JSON.stringify({ event: 'listening', port: app.server?.port }))
process.on('SIGTERM', () => {
  void app.stop(true)
  process.exit(0)
})
