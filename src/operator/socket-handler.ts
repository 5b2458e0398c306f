import type { Progress } from '../runtime/progress.ts'
import { AppError } from '../shared/errors.ts'
import type { OperatorContext } from './command.ts'
import { runOperatorCommand } from './commands.ts'
import { type OperatorLine, errorLine } from './outcome.ts'

/**
 * Serves operator commands on the server's local socket (`DATA_DIR/mirador.sock`, mode 0600):
 * `POST /command {name, args}` answers a stream of NDJSON lines. Only reachable by users who can
 * open the data directory, which is the same trust as running the CLI against the store directly.
 */
export function operatorHandler(context: (progress: Progress) => OperatorContext) {
  return async (request: Request): Promise<Response> => {
    if (request.method !== 'POST' || !request.url.endsWith('/command')) {
      return Response.json(errorLine(new AppError('not_found', 'POST /command is the only operator endpoint')), { status: 404 })
    }
    let body: { name?: unknown; args?: unknown }
    try {
      body = (await request.json()) as typeof body
    } catch {
      return Response.json(errorLine(new AppError('invalid_request', 'the body must be JSON {name, args}')), { status: 400 })
    }
    const encoder = new TextEncoder()
    const stream = new ReadableStream<Uint8Array>({
      async start(controller) {
        const send = (line: OperatorLine) => controller.enqueue(encoder.encode(`${JSON.stringify(line)}\n`))
        let last = 0
        const progress: Progress = (update) => {
          const now = Date.now()
          if (now - last < 100 && update.done < update.total) return
          last = now
          send({ progress: update })
        }
        try {
          send({ ok: true, result: await runOperatorCommand(context(progress), String(body.name), body.args ?? {}) })
        } catch (error) {
          send(errorLine(error))
        }
        controller.close()
      },
    })
    return new Response(stream, { headers: { 'content-type': 'application/x-ndjson' } })
  }
}
