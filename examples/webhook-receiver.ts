/**
 * A tiny receiver of Mirador's webhooks: it checks each delivery's signature with the
 * `standardwebhooks` package (any Standard Webhooks library does), answers 204, skips a delivery
 * it has already taken (same `webhook-id`: a retry), and prints each event on a line of its own.
 *
 *   WEBHOOK_SECRET=whsec_… npx bun examples/webhook-receiver.ts      # listens on 127.0.0.1:8787
 *   WEBHOOK_SECRET=whsec_… PORT=9000 npx node --experimental-transform-types examples/webhook-receiver.ts
 *
 * Answers: 204 taken (or already taken); 401 not signed with the secret, signed more than 5 minutes
 * from now, or without the three webhook-* headers; 400 signed but not JSON; 413 over 1 MiB;
 * 405 anything but POST. A Standard Webhooks sender retries what is not 2xx, with the same `webhook-id`.
 *
 * The ids taken are kept in memory, so a restart forgets them: a real receiver records them where
 * it records what the event changed (a unique key), in the same transaction.
 */
import { type IncomingMessage, createServer } from 'node:http'
import { Webhook, WebhookVerificationError } from 'standardwebhooks'

const MAX_BODY_BYTES = 1 << 20

const secret = process.env.WEBHOOK_SECRET
if (!secret) {
  console.error('set WEBHOOK_SECRET to the secret Mirador gave for this endpoint (whsec_…)')
  process.exit(2)
}
const webhook = new Webhook(secret)
const taken = new Set<string>()

/** The body as text, or null past the limit (read to its end all the same, so that the answer is seen). */
async function bodyOf(request: IncomingMessage): Promise<string | null> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length
    if (size <= MAX_BODY_BYTES) chunks.push(chunk)
  }
  return size > MAX_BODY_BYTES ? null : Buffer.concat(chunks).toString('utf8')
}

/** The status to answer a delivery with; prints the event when it is taken for the first time. */
function receive(headers: Record<string, string>, body: string): number {
  let event: unknown
  try {
    event = webhook.verify(body, headers)
  } catch (error) {
    if (error instanceof WebhookVerificationError) return 401
    if (error instanceof SyntaxError) return 400
    throw error
  }
  const id = headers['webhook-id']!
  if (taken.has(id)) return 204
  taken.add(id)
  console.log(JSON.stringify({ id, event }))
  return 204
}

const server = createServer(async (request, response) => {
  if (request.method !== 'POST') return response.writeHead(405, { allow: 'POST' }).end()
  const body = await bodyOf(request)
  if (body === null) return response.writeHead(413).end()
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(request.headers)) if (typeof value === 'string') headers[name] = value
  const status = receive(headers, body)
  if (status !== 204) console.error(`refused a delivery: ${status} (webhook-id ${headers['webhook-id'] ?? 'none'})`)
  response.writeHead(status).end()
})

server.listen(Number(process.env.PORT ?? 8787), '127.0.0.1', () => {
  const address = server.address()
  console.log(`listening on http://127.0.0.1:${typeof address === 'object' && address ? address.port : '?'}`)
})
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => server.close(() => process.exit(0)))
