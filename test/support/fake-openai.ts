import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

/**
 * A real HTTP server on 127.0.0.1 speaking the chat-completions protocol, for tests of the OpenAI
 * writer (there is no network here). Each test scripts the replies in order; a request with
 * nothing scripted gets HTTP 500 so that an unexpected call cannot pass unnoticed.
 */
export type FakeReply =
  | { kind: 'content'; content: string }
  | { kind: 'status'; status: number }
  | { kind: 'slow'; ms: number; then: FakeReply }

/** A well-formed answer whose message content is `value` as JSON. */
export const answer = (value: unknown): FakeReply => ({ kind: 'content', content: JSON.stringify(value) })
/** An answer whose message content is `text` verbatim (e.g. malformed JSON). */
export const rawContent = (text: string): FakeReply => ({ kind: 'content', content: text })
export const httpError = (status: number): FakeReply => ({ kind: 'status', status })
export const slow = (ms: number, then: FakeReply): FakeReply => ({ kind: 'slow', ms, then })

export type RecordedRequest = { path: string; authorization: string | undefined; body: Record<string, unknown> }

export type FakeOpenAi = {
  /** For the `openai` client's baseURL (ends in /v1). */
  baseUrl: string
  requests: RecordedRequest[]
  script(...replies: FakeReply[]): void
  close(): Promise<void>
}

const readBody = (request: IncomingMessage) =>
  new Promise<string>((resolve, reject) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')))
    request.on('error', reject)
  })

const sendJson = (response: ServerResponse, status: number, body: unknown) => {
  if (response.destroyed) return
  response.writeHead(status, { 'content-type': 'application/json' })
  response.end(JSON.stringify(body))
}

export async function startFakeOpenAi(): Promise<FakeOpenAi> {
  const queue: FakeReply[] = []
  const requests: RecordedRequest[] = []
  const timers = new Set<NodeJS.Timeout>()
  let completions = 0

  const reply = (response: ServerResponse, model: string, next: FakeReply | undefined) => {
    if (!next) return sendJson(response, 500, { error: { message: 'fake-openai: no reply scripted', type: 'server_error' } })
    switch (next.kind) {
      case 'status':
        return sendJson(response, next.status, { error: { message: `fake-openai: scripted HTTP ${next.status}`, type: 'server_error' } })
      case 'slow': {
        const timer = setTimeout(() => {
          timers.delete(timer)
          reply(response, model, next.then)
        }, next.ms)
        timers.add(timer)
        return
      }
      case 'content':
        completions += 1
        return sendJson(response, 200, {
          id: `chatcmpl-fake-${completions}`,
          object: 'chat.completion',
          created: 1_700_000_000 + completions,
          model,
          choices: [
            { index: 0, message: { role: 'assistant', content: next.content, refusal: null }, finish_reason: 'stop', logprobs: null },
          ],
          usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
        })
    }
  }

  const server = createServer(async (request, response) => {
    const text = await readBody(request)
    const path = request.url ?? '/'
    if (request.method !== 'POST' || !path.endsWith('/chat/completions')) {
      return sendJson(response, 404, { error: { message: `fake-openai: no route ${request.method} ${path}` } })
    }
    const body = JSON.parse(text) as Record<string, unknown>
    requests.push({ path, authorization: request.headers.authorization, body })
    reply(response, String(body.model ?? 'fake-model'), queue.shift())
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo

  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    script(...replies) {
      queue.splice(0, queue.length, ...replies)
    },
    async close() {
      for (const timer of timers) clearTimeout(timer)
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
