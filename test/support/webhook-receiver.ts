import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Webhook } from 'standardwebhooks'

/** One request a test receiver got: its webhook headers, its body parsed, and whether the signature verified. */
export type Received = { id: string; timestamp: string; type: string; body: Record<string, unknown>; verified: boolean; at: number }

/** How the receiver answers the next request: a status after a delay (ms). */
export type Behaviour = (received: Received, count: number) => { status: number; delayMs?: number; location?: string }

/**
 * A webhook receiver on 127.0.0.1 for specs: it records every request, verifies its signature with
 * the `standardwebhooks` package (what a subscriber would use) and answers as `behave` says
 * (204 at once unless told). `stop` closes it, and `start` listens again on the same port (a receiver down and back).
 */
export class TestReceiver {
  readonly requests: Received[] = []
  behave: Behaviour = () => ({ status: 204 })
  private server: Server | null = null
  private port = 0

  constructor(private readonly secret: string | (() => string)) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}/hook`
  }

  /** Each message id once, in the order first received. */
  get distinct(): Received[] {
    const seen = new Set<string>()
    return this.requests.filter((r) => (seen.has(r.id) ? false : seen.add(r.id)))
  }

  async start(): Promise<this> {
    const server = createServer((request, response) => void this.handle(request, response))
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve))
    this.port = (server.address() as AddressInfo).port
    this.server = server
    return this
  }

  async stop(): Promise<void> {
    const server = this.server
    this.server = null
    if (!server) return
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = []
    for await (const chunk of request) chunks.push(chunk as Buffer)
    const text = Buffer.concat(chunks).toString('utf8')
    const headers = { 'webhook-id': String(request.headers['webhook-id']), 'webhook-timestamp': String(request.headers['webhook-timestamp']), 'webhook-signature': String(request.headers['webhook-signature']) }
    let verified = true
    try {
      new Webhook(typeof this.secret === 'string' ? this.secret : this.secret()).verify(text, headers)
    } catch {
      verified = false
    }
    const body = JSON.parse(text) as Record<string, unknown>
    const received = { id: headers['webhook-id'], timestamp: headers['webhook-timestamp'], type: String(body.type), body, verified, at: Date.now() }
    this.requests.push(received)
    const { status, delayMs, location } = this.behave(received, this.requests.length)
    if (delayMs) await new Promise((resolve) => setTimeout(resolve, delayMs))
    if (!response.destroyed) response.writeHead(status, location ? { location } : {}).end()
  }
}
