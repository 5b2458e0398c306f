import type { Progress } from '../runtime/progress.ts'
import { fail } from '../shared/errors.ts'
import type { OperatorContext } from './command.ts'
import { runOperatorCommand } from './commands.ts'
import { type OperatorLine, errorLine } from './outcome.ts'

/**
 * The largest command the socket reads: a batch of `ingest` (src/operator/commands/ingest.ts sends at
 * most 4 Mi characters and one line, each line at most 1 MiB, src/domain/listings/feed.ts) as JSON,
 * escapes included. Anything longer is refused before it is held in memory.
 */
const MAX_COMMAND_BYTES = 16 * 1024 * 1024

/** The body as text, or null as soon as it is longer than `max` bytes (stops reading there). */
async function bodyWithin(request: Request, max: number): Promise<string | null> {
  if (Number(request.headers.get('content-length') ?? 0) > max) return null
  if (!request.body) return ''
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const chunk of request.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength
    if (size > max) return null
    chunks.push(chunk)
  }
  return Buffer.concat(chunks).toString('utf8')
}

/**
 * Serves operator commands on the server's local socket (`DATA_DIR/mirador.sock`, mode 0600):
 * `POST /command {name, args}` answers a stream of NDJSON lines. Only reachable by users who can
 * open the data directory, which is the same trust as running the CLI against the store directly.
 */
export function operatorHandler(context: (progress: Progress) => OperatorContext) {
  return async (request: Request): Promise<Response> => {
    if (request.method !== 'POST' || !request.url.endsWith('/command')) {
      return Response.json(errorLine(fail.notFound('POST /command is the only operator endpoint')), { status: 404 })
    }
    const text = await bodyWithin(request, MAX_COMMAND_BYTES)
    if (text === null) {
      return Response.json(errorLine(fail.payloadTooLarge(`an operator command may be at most ${MAX_COMMAND_BYTES} bytes; a feed line at most 1 MiB (docs/feed-format.md)`)), { status: 413 })
    }
    let body: { name?: unknown; args?: unknown }
    try {
      body = JSON.parse(text) as typeof body
    } catch {
      return Response.json(errorLine(fail.invalidRequest('the body must be JSON {name, args}')), { status: 400 })
    }
    const encoder = new TextEncoder()
    // The CLI may go away (Ctrl-C) while the command runs: the command goes on (a rebuild finishes;
    // `projections status` follows it), what it would still say is dropped.
    let gone = false
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        const send = (line: OperatorLine) => {
          if (!gone) controller.enqueue(encoder.encode(`${JSON.stringify(line)}\n`))
        }
        let last = 0
        const progress: Progress = (update) => {
          const now = Date.now()
          if (now - last < 100 && update.done !== update.total) return
          last = now
          send({ progress: update })
        }
        // Not awaited: Bun sends nothing of the stream before `start` returns, so progress lines
        // awaited here would all arrive with the result.
        void (async () => {
          try {
            send({ ok: true, result: await runOperatorCommand(context(progress), String(body.name), body.args ?? {}) })
          } catch (error) {
            send(errorLine(error))
          }
          if (!gone) controller.close()
        })()
      },
      cancel() {
        gone = true
      },
    })
    return new Response(stream, { headers: { 'content-type': 'application/x-ndjson' } })
  }
}
