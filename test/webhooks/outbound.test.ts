import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import fc from 'fast-check'
import { afterEach, describe, expect, test } from 'vitest'
import { AppError } from '../../src/shared/errors.ts'
import {
  assertTarget,
  checkTarget,
  deliver,
  type Fetch,
  isPublicAddress,
  type Lookup,
  MAX_ANSWER_BYTES,
} from '../../src/webhooks/outbound.ts'
import { eventually } from '../support/eventually.ts'

/**
 * The outbound guard and delivery client of webhooks (decision 0112, src/webhooks/outbound.ts): what
 * a subscriber's URL may be, checked as written at subscription and on the resolved addresses at each
 * delivery, and what each way a receiver can answer (or not) becomes. The receivers are node:http
 * servers on 127.0.0.1, reached in local mode (allowHttp and allowPrivate), or, for the refusals on
 * resolved names, through a lookup that answers what the test says and a fetch that routes the name
 * to the local receiver, so that a missed refusal would show as a connection.
 */

const PRODUCTION = { allowHttp: false } as const
const LOCAL = { allowHttp: true, allowPrivate: true } as const

describe('checkTarget: the URL as written, at subscription', () => {
  const REFUSED: [url: string, options: { allowHttp: boolean; allowPrivate?: boolean }, message: string][] = [
    ['http://127.0.0.1', { allowHttp: true }, 'Expected a public address: 127.0.0.1 is a loopback address'],
    ['http://[::1]', { allowHttp: true }, 'Expected a public address: ::1 is a loopback address'],
    ['https://169.254.169.254/latest/meta-data', PRODUCTION, 'Expected a public address: 169.254.169.254 is a cloud metadata address'],
    ['https://10.1.2.3', PRODUCTION, 'Expected a public address: 10.1.2.3 is a private address'],
    ['https://192.168.0.1', PRODUCTION, 'Expected a public address: 192.168.0.1 is a private address'],
    ['https://[fd00::1]', PRODUCTION, 'Expected a public address: fd00::1 is a unique-local address'],
    ['https://[::ffff:127.0.0.1]', PRODUCTION, 'Expected a public address: ::ffff:7f00:1 is a loopback address (IPv4 127.0.0.1 in IPv6 form)'],
    ['https://0.0.0.0', PRODUCTION, 'Expected a public address: 0.0.0.0 is an unspecified ("this network") address'],
    ['https://localhost', PRODUCTION, 'Expected a public host name: localhost names this machine or a private network'],
    ['https://x.internal', PRODUCTION, 'Expected a public host name: x.internal names this machine or a private network'],
    [`https://example.com/${'a'.repeat(2029)}`, PRODUCTION, 'Expected a URL of at most 2048 characters (this one has 2049)'],
    ['ftp://x', PRODUCTION, 'Expected an https URL, not ftp:'],
    ['https://user:pw@example.com', PRODUCTION, 'Expected a URL without a user name or password (user:password@)'],
    ['http://example.com', PRODUCTION, 'Expected an https URL: plain http is allowed only for a local receiver'],
    // The same addresses in the other spellings the URL parser and IPv6 allow.
    ['https://2130706433/', PRODUCTION, 'Expected a public address: 127.0.0.1 is a loopback address'],
    ['https://0x7f.1/', PRODUCTION, 'Expected a public address: 127.0.0.1 is a loopback address'],
    ['https://[::ffff:169.254.169.254]', PRODUCTION, 'Expected a public address: ::ffff:a9fe:a9fe is a cloud metadata address (IPv4 169.254.169.254 in IPv6 form)'],
    ['https://[64:ff9b::169.254.169.254]', PRODUCTION, 'Expected a public address: 64:ff9b::a9fe:a9fe is a cloud metadata address (IPv4 169.254.169.254 in IPv6 form)'],
    ['https://[64:ff9b::10.0.0.1]', PRODUCTION, 'Expected a public address: 64:ff9b::a00:1 is a private address (IPv4 10.0.0.1 in IPv6 form)'],
    ['https://[::169.254.169.254]', PRODUCTION, 'Expected a public address: ::a9fe:a9fe is a reserved IPv6 address (outside the global unicast space 2000::/3)'],
    ['https://[2002:a9fe:a9fe::1]', PRODUCTION, 'Expected a public address: 2002:a9fe:a9fe::1 is a 6to4 address'],
    ['https://[2001:0:4136:e378:8000:63bf:5601:5efe]', PRODUCTION, 'Expected a public address: 2001:0:4136:e378:8000:63bf:5601:5efe is a Teredo address'],
    ['https://[fd00:ec2::254]', PRODUCTION, 'Expected a public address: fd00:ec2::254 is a cloud metadata address'],
    ['https://[fe80::1]', PRODUCTION, 'Expected a public address: fe80::1 is a link-local address'],
    ['https://[ff02::1]', PRODUCTION, 'Expected a public address: ff02::1 is a multicast address'],
    ['https://[2001:db8::1]', PRODUCTION, 'Expected a public address: 2001:db8::1 is a reserved or documentation address'],
    ['https://100.64.0.1', PRODUCTION, 'Expected a public address: 100.64.0.1 is a carrier-grade NAT (CGNAT) address'],
    ['https://172.31.255.255', PRODUCTION, 'Expected a public address: 172.31.255.255 is a private address'],
    ['https://224.0.0.1', PRODUCTION, 'Expected a public address: 224.0.0.1 is a multicast address'],
    ['https://255.255.255.255', PRODUCTION, 'Expected a public address: 255.255.255.255 is the broadcast address'],
    ['https://192.0.2.10', PRODUCTION, 'Expected a public address: 192.0.2.10 is a reserved or documentation address'],
    ['https://198.18.0.1', PRODUCTION, 'Expected a public address: 198.18.0.1 is a reserved or documentation address'],
    ['https://localhost.', PRODUCTION, 'Expected a public host name: localhost. names this machine or a private network'],
    ['https://api.localhost', PRODUCTION, 'Expected a public host name: api.localhost names this machine or a private network'],
    ['https://printer.local', PRODUCTION, 'Expected a public host name: printer.local names this machine or a private network'],
    ['https://metadata.google.internal/computeMetadata/v1', PRODUCTION, 'Expected a public host name: metadata.google.internal names this machine or a private network'],
    ['https://metadata/', PRODUCTION, 'Expected a fully qualified host name, e.g. hooks.example.com: metadata would be resolved in a local domain'],
    ['https://example.com:0/', PRODUCTION, 'Expected a port from 1 to 65535'],
    ['https://example.com:65536/', PRODUCTION, 'Expected an absolute URL, e.g. https://hooks.example.com/mirador'],
    ['/hooks/mirador', PRODUCTION, 'Expected an absolute URL, e.g. https://hooks.example.com/mirador'],
    ['javascript:alert(1)', PRODUCTION, 'Expected an https URL, not javascript:'],
    ['https://exam\nple.com/', PRODUCTION, 'Expected a URL without spaces or control characters'],
    ['https://:pw@example.com', PRODUCTION, 'Expected a URL without a user name or password (user:password@)'],
    // Local mode allows loopback and private addresses, never a metadata service; allowPrivate alone allows nothing.
    ['http://169.254.169.254/latest', LOCAL, 'Expected a public address: 169.254.169.254 is a cloud metadata address'],
    ['http://0.0.0.0:8080', LOCAL, 'Expected a public address: 0.0.0.0 is an unspecified ("this network") address'],
    ['https://127.0.0.1', { allowHttp: false, allowPrivate: true }, 'Expected a public address: 127.0.0.1 is a loopback address'],
  ]

  test.each(REFUSED)('%s is refused (%o)', (url, options, message) => {
    expect(checkTarget(url, options)).toEqual([{ field: 'url', message }])
  })

  test('the caller sees a 400 invalid_request naming the field url', () => {
    const refusal = (() => {
      try {
        assertTarget('https://10.1.2.3/hook', PRODUCTION)
      } catch (error) {
        return error
      }
    })()
    expect(refusal).toBeInstanceOf(AppError)
    expect((refusal as AppError).body()).toEqual({
      ok: false,
      error: 'invalid_request',
      message: 'the webhook URL is not one Mirador may send to',
      details: [{ field: 'url', message: 'Expected a public address: 10.1.2.3 is a private address' }],
    })
  })

  test.each([
    ['https://hooks.example.com/mirador?tenant=7', PRODUCTION],
    ['https://hooks.example.com:8443/mirador', PRODUCTION],
    ['https://93.184.215.14/hook', PRODUCTION],
    ['https://[2606:4700:4700::1111]/hook', PRODUCTION],
    ['https://[::ffff:8.8.8.8]/hook', PRODUCTION],
    ['https://[64:ff9b::8.8.8.8]/hook', PRODUCTION],
    [`https://example.com/${'a'.repeat(2028)}`, PRODUCTION],
    ['http://hooks.example.com/mirador', { allowHttp: true }],
    ['http://127.0.0.1:8080/hook', LOCAL],
    ['http://localhost:8080/hook', LOCAL],
    ['http://receiver:8080/hook', LOCAL],
    ['http://[::1]:8080/hook', LOCAL],
    ['http://192.168.1.20/hook', LOCAL],
  ])('%s is accepted (%o)', (url, options) => {
    expect(checkTarget(url, options)).toEqual([])
    expect(() => assertTarget(url, options)).not.toThrow()
  })
})

// ---------------------------------------------------------------------------------------------------
// Local receivers

type Received = { method: string; headers: IncomingHttpHeaders; body: string }
type Receiver = { url: string; port: number; connections: number; requests: Received[] }

const servers: Server[] = []
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }
})

/** A receiver on 127.0.0.1 that counts connections, records each request and answers with `answer`. */
async function receiver(answer: (response: ServerResponse, request: IncomingMessage) => void): Promise<Receiver> {
  const received: Omit<Receiver, 'url' | 'port'> = { connections: 0, requests: [] }
  const server = createServer(async (request, response) => {
    const chunks: Buffer[] = []
    for await (const chunk of request) chunks.push(chunk as Buffer)
    received.requests.push({ method: request.method ?? '', headers: request.headers, body: Buffer.concat(chunks).toString() })
    answer(response, request)
  })
  server.on('connection', () => received.connections++)
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return Object.assign(received, { port, url: `http://127.0.0.1:${port}` })
}

const answering = (status: number, body = '', headers: Record<string, string> = {}) => (response: ServerResponse) => {
  response.writeHead(status, headers)
  response.end(body)
}

/** A lookup that answers `addresses` for every name, and the names it was asked. */
function resolvingTo(...addresses: string[]): Lookup & { asked: string[] } {
  const asked: string[] = []
  const lookup = async (hostname: string) => {
    asked.push(hostname)
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }))
  }
  return Object.assign(lookup, { asked })
}

/** A fetch that connects to the receiver whatever the URL's host, as if the name resolved to it; and the URLs it was given. */
function routedTo(port: number): Fetch & { calls: string[] } {
  const calls: string[] = []
  const routed: Fetch = (url, init) => {
    calls.push(url.href)
    const local = new URL(url)
    local.protocol = 'http:'
    local.hostname = '127.0.0.1'
    local.port = String(port)
    return fetch(local, init)
  }
  return Object.assign(routed, { calls })
}

const EVENT = { body: '{"type":"listing.updated"}', headers: { 'webhook-id': 'msg_1' } }

describe('deliver: the resolved addresses, at each delivery', () => {
  test.each([
    [['10.0.0.1'], 'hooks.example.com resolves to 10.0.0.1, a private address'],
    [['127.0.0.1'], 'hooks.example.com resolves to 127.0.0.1, a loopback address'],
    [['169.254.169.254'], 'hooks.example.com resolves to 169.254.169.254, a cloud metadata address'],
    [['93.184.215.14', '10.0.0.1'], 'hooks.example.com resolves to 10.0.0.1, a private address'],
    [['2606:4700::6810:84e5', 'fd00::1'], 'hooks.example.com resolves to fd00::1, a unique-local address'],
    [['::ffff:10.0.0.1'], 'hooks.example.com resolves to ::ffff:10.0.0.1, a private address (IPv4 10.0.0.1 in IPv6 form)'],
    // glibc writes an IPv4-compatible answer (::808:808) with a dotted tail; it is not the IPv4-mapped ::ffff:8.8.8.8.
    [['::8.8.8.8'], 'hooks.example.com resolves to ::8.8.8.8, a reserved IPv6 address (outside the global unicast space 2000::/3)'],
  ])('a name resolving to %o is refused without a connection', async (addresses, reason) => {
    const hooks = await receiver(answering(200))
    const lookup = resolvingTo(...addresses)
    const routed = routedTo(hooks.port)
    const outcome = await deliver('https://hooks.example.com/mirador', EVENT, { ...PRODUCTION, lookup, fetch: routed })
    expect(outcome).toEqual({ kind: 'refused', reason })
    expect(lookup.asked).toEqual(['hooks.example.com'])
    expect(routed.calls).toEqual([])
    expect(hooks.connections).toBe(0)
  })

  test('the same name resolving to public addresses only is delivered (the routing above would have connected)', async () => {
    const hooks = await receiver(answering(204))
    const routed = routedTo(hooks.port)
    const outcome = await deliver('https://hooks.example.com/mirador', EVENT, { ...PRODUCTION, lookup: resolvingTo('93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'), fetch: routed })
    expect(outcome).toMatchObject({ kind: 'delivered', status: 204 })
    expect(routed.calls).toEqual(['https://hooks.example.com/mirador'])
    expect(hooks.connections).toBe(1)
  })

  test('a URL refused as written is refused at delivery too, before any lookup', async () => {
    const lookup = resolvingTo('93.184.215.14')
    expect(await deliver('https://10.0.0.1/hook', EVENT, { ...PRODUCTION, lookup })).toEqual({ kind: 'refused', reason: 'Expected a public address: 10.0.0.1 is a private address' })
    expect(await deliver('http://hooks.example.com/hook', EVENT, { ...PRODUCTION, lookup })).toEqual({
      kind: 'refused',
      reason: 'Expected an https URL: plain http is allowed only for a local receiver',
    })
    expect(lookup.asked).toEqual([])
  })

  test('a name that does not resolve is unreachable', async () => {
    const lookup: Lookup = async () => {
      throw Object.assign(new Error('getaddrinfo ENOTFOUND hooks.example.com'), { code: 'ENOTFOUND' })
    }
    expect(await deliver('https://hooks.example.com/', EVENT, { ...PRODUCTION, lookup })).toEqual({
      kind: 'unreachable',
      reason: 'hooks.example.com did not resolve: getaddrinfo ENOTFOUND hooks.example.com',
    })
    expect(await deliver('https://hooks.example.com/', EVENT, { ...PRODUCTION, lookup: resolvingTo() })).toEqual({
      kind: 'unreachable',
      reason: 'hooks.example.com resolved to no address',
    })
  })

  test('a lookup slower than the deadline is a timeout', async () => {
    const lookup: Lookup = () => new Promise(() => {})
    expect(await deliver('https://hooks.example.com/', EVENT, { ...PRODUCTION, lookup, timeoutMs: 100 })).toEqual({ kind: 'timeout' })
  })
})

describe('deliver: what the receiver answers', () => {
  test('200 is delivered, after one POST with the body and headers given; ms from the clock', async () => {
    const hooks = await receiver(answering(200, 'ok'))
    const times = [1000, 1042]
    const outcome = await deliver(`${hooks.url}/hook`, EVENT, { ...LOCAL, now: () => times.shift() ?? Number.NaN })
    expect(outcome).toEqual({ kind: 'delivered', status: 200, ms: 42 })
    expect(hooks.requests).toHaveLength(1)
    expect(hooks.requests[0]).toMatchObject({ method: 'POST', body: EVENT.body, headers: { 'content-type': 'application/json', 'webhook-id': 'msg_1', 'user-agent': 'Mirador-Webhooks/1' } })
  })

  test('local mode reaches localhost by name, through the real resolver', async () => {
    const hooks = await receiver(answering(202))
    expect(await deliver(`http://localhost:${hooks.port}/hook`, EVENT, LOCAL)).toMatchObject({ kind: 'delivered', status: 202 })
    expect(await deliver(`http://127.0.0.1:${hooks.port}/hook`, EVENT, LOCAL)).toMatchObject({ kind: 'delivered', status: 202 })
  })

  test('500 is rejected, with its status and body', async () => {
    const hooks = await receiver(answering(500, 'database is down'))
    const outcome = await deliver(`${hooks.url}/hook`, EVENT, LOCAL)
    expect(outcome).toMatchObject({ kind: 'rejected', status: 500, body: 'database is down' })
    expect(outcome.kind === 'rejected' && outcome.ms).toBeGreaterThanOrEqual(0)
  })

  test.each([301, 302, 303, 307, 308])('%i to another receiver is redirected, reported and not followed', async (status) => {
    const elsewhere = await receiver(answering(200))
    const hooks = await receiver(answering(status, 'moved', { location: `${elsewhere.url}/stolen` }))
    expect(await deliver(`${hooks.url}/hook`, EVENT, LOCAL)).toEqual({ kind: 'redirected', status, location: `${elsewhere.url}/stolen` })
    expect(hooks.requests).toHaveLength(1)
    expect(elsewhere.connections).toBe(0)
  })

  test('302 to the metadata service is redirected, the Location never fetched', async () => {
    const hooks = await receiver(answering(302, '', { location: 'http://169.254.169.254/latest/meta-data/iam/security-credentials/' }))
    const calls: string[] = []
    const counting: Fetch = (url, init) => {
      calls.push(url.href)
      return fetch(url, init)
    }
    expect(await deliver(`${hooks.url}/hook`, EVENT, { ...LOCAL, fetch: counting })).toEqual({
      kind: 'redirected',
      status: 302,
      location: 'http://169.254.169.254/latest/meta-data/iam/security-credentials/',
    })
    expect(calls).toEqual([`${hooks.url}/hook`])
  })

  test('a receiver slower than the deadline is a timeout', async () => {
    const hooks = await receiver((response) => {
      const later = setTimeout(() => response.end(), 10_000)
      response.on('close', () => clearTimeout(later))
    })
    expect(await deliver(`${hooks.url}/hook`, EVENT, { ...LOCAL, timeoutMs: 300 })).toEqual({ kind: 'timeout' })
    expect(hooks.requests).toHaveLength(1)
  })

  test('no one listening is unreachable; a TLS handshake with a plain-http server is unreachable', async () => {
    const gone = await receiver(answering(200))
    const closed = servers.pop() as Server
    await new Promise((resolve) => closed.close(resolve))
    const refused = await deliver(`${gone.url}/hook`, EVENT, LOCAL)
    expect(refused).toMatchObject({ kind: 'unreachable' })
    expect(refused.kind === 'unreachable' && refused.reason).toMatch(/ECONNREFUSED/)
    const plain = await receiver(answering(200))
    const outcome = await deliver(`https://127.0.0.1:${plain.port}/hook`, EVENT, LOCAL)
    expect(outcome).toMatchObject({ kind: 'unreachable' })
    expect(outcome.kind === 'unreachable' && outcome.reason.length).toBeGreaterThan(0)
    expect(plain.requests).toHaveLength(0)
  })
})

describe('deliver: at most 64 KiB of an answer is read', () => {
  const TEN_MB = 10 * 1024 * 1024

  /**
   * A receiver answering `status` with 10 MB, written as the client reads; records how far it got and
   * whether it finished. The kernel holds what the client has not read (about 4 MB on Linux's loopback
   * with its default buffers), so 10 MB cannot all be sent unless the client reads on.
   */
  async function flooding(status: number) {
    const sent = { written: 0, closed: false, finished: false }
    const hooks = await receiver((response) => {
      response.writeHead(status, { 'content-type': 'text/plain', 'content-length': String(TEN_MB) })
      const chunk = Buffer.alloc(64 * 1024, 'x')
      const pump = () => {
        while (sent.written < TEN_MB && !response.destroyed) {
          sent.written += chunk.length
          if (!response.write(chunk)) return void response.once('drain', pump)
        }
        response.end()
      }
      response.on('close', () => {
        sent.closed = true
        sent.finished = response.writableFinished
      })
      pump()
    })
    return { hooks, sent }
  }

  test('a 500 answering 10 MB: the outcome holds the first 64 KiB, and the connection is closed before the rest is sent', async () => {
    const { hooks, sent } = await flooding(500)
    const outcome = await deliver(`${hooks.url}/hook`, EVENT, LOCAL)
    expect(outcome).toMatchObject({ kind: 'rejected', status: 500 })
    const body = outcome.kind === 'rejected' ? outcome.body : ''
    expect(Buffer.byteLength(body)).toBe(MAX_ANSWER_BYTES)
    expect(body).toBe('x'.repeat(MAX_ANSWER_BYTES))
    await eventually('the receiver sees the connection closed', () => sent.closed)
    expect(sent.finished).toBe(false)
    expect(sent.written).toBeLessThan(TEN_MB)
  })

  test('a 200 answering 10 MB: delivered, its body not read', async () => {
    const { hooks, sent } = await flooding(200)
    expect(await deliver(`${hooks.url}/hook`, EVENT, LOCAL)).toMatchObject({ kind: 'delivered', status: 200 })
    await eventually('the receiver sees the connection closed', () => sent.closed)
    expect(sent.finished).toBe(false)
  })
})

// ---------------------------------------------------------------------------------------------------
// The guard against an independent table of the reserved ranges

/**
 * The IANA IPv4 Special-Purpose Address Registry (RFC 6890 and its updates), every block whether or
 * not IANA marks it globally reachable, with multicast (RFC 5771) and the former class E (RFC 1112,
 * the limited broadcast 255.255.255.255 in it): written from the registries, not from ipaddr.js.
 */
const IPV4_SPECIAL = [
  '0.0.0.0/8', // "this network" (RFC 791)
  '10.0.0.0/8', // private (RFC 1918)
  '100.64.0.0/10', // shared address space, CGNAT (RFC 6598)
  '127.0.0.0/8', // loopback (RFC 1122)
  '169.254.0.0/16', // link-local (RFC 3927), cloud metadata 169.254.169.254 in it
  '172.16.0.0/12', // private
  '192.0.0.0/24', // IETF protocol assignments (RFC 6890): DS-Lite, NAT64 discovery, PCP and TURN anycast
  '192.0.2.0/24', // documentation TEST-NET-1 (RFC 5737)
  '192.31.196.0/24', // AS112-v4 (RFC 7535)
  '192.52.193.0/24', // AMT (RFC 7450)
  '192.88.99.0/24', // 6to4 relay anycast, deprecated (RFC 7526)
  '192.168.0.0/16', // private
  '192.175.48.0/24', // direct delegation AS112 service (RFC 7534)
  '198.18.0.0/15', // benchmarking (RFC 2544)
  '198.51.100.0/24', // documentation TEST-NET-2
  '203.0.113.0/24', // documentation TEST-NET-3
  '224.0.0.0/4', // multicast
  '240.0.0.0/4', // reserved, and the limited broadcast address (RFC 919)
]

/**
 * The IANA IPv6 Special-Purpose Address Registry's blocks inside the global unicast space 2000::/3
 * (RFC 4291; everything outside it is loopback, unspecified, unique-local, link-local, multicast,
 * discard, IPv4-compatible, or not assigned: not public), except two that carry an IPv4 address and
 * are judged by it: IPv4-mapped ::ffff:0:0/96 and the well-known NAT64 prefix 64:ff9b::/96 (RFC 6052).
 */
const IPV6_SPECIAL = [
  '2001::/23', // IETF protocol assignments (RFC 2928): Teredo 2001::/32, benchmarking 2001:2::/48, AMT, AS112, ORCHID, DRIP, anycast services
  '2001:db8::/32', // documentation (RFC 3849)
  '2002::/16', // 6to4 (RFC 3056)
  '2620:4f:8000::/48', // direct delegation AS112 service (RFC 7534)
  '3fff::/20', // documentation (RFC 9637)
]

const v4 = (text: string): number => text.split('.').reduce((value, octet) => value * 256 + Number(octet), 0)
const v4Text = (n: number): string => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.')

/** An IPv6 address's text as a 128-bit number: `::` expanded, a dotted IPv4 tail read as two groups. */
function v6(text: string): bigint {
  const dotted = /^(.*:)(\d+\.\d+\.\d+\.\d+)$/.exec(text)
  const hex = dotted ? `${dotted[1]}${(v4(dotted[2] as string) >>> 16).toString(16)}:${(v4(dotted[2] as string) & 0xffff).toString(16)}` : text
  const groups = (part: string) => (part === '' ? [] : part.split(':'))
  const [left = '', right] = hex.split('::')
  const all = right === undefined ? groups(left) : [...groups(left), ...Array(8 - groups(left).length - groups(right).length).fill('0'), ...groups(right)]
  return all.reduce((value, group) => (value << 16n) | BigInt(Number.parseInt(group, 16)), 0n)
}
const v6Full = (n: bigint): string => Array.from({ length: 8 }, (_, i) => ((n >> BigInt(112 - 16 * i)) & 0xffffn).toString(16)).join(':')

const cidrs = <T,>(blocks: string[], parse: (text: string) => T) => blocks.map((block) => [parse(block.split('/')[0] as string), Number(block.split('/')[1])] as const)
const V4_BLOCKS = cidrs(IPV4_SPECIAL, v4)
const V6_BLOCKS = cidrs(IPV6_SPECIAL, v6)

const inV4 = (n: number, [base, bits]: readonly [number, number]) => n >>> (32 - bits) === base >>> (32 - bits)
const inV6 = (n: bigint, [base, bits]: readonly [bigint, number]) => n >> BigInt(128 - bits) === base >> BigInt(128 - bits)

/** The oracle's verdict: public or not, by the tables above. */
const publicV4 = (n: number): boolean => !V4_BLOCKS.some((block) => inV4(n, block))
function publicV6(n: bigint): boolean {
  if (n >> 32n === 0xffffn) return publicV4(Number(n & 0xffffffffn)) // ::ffff:0:0/96
  if (n >> 32n === v6('64:ff9b::') >> 32n) return publicV4(Number(n & 0xffffffffn)) // 64:ff9b::/96
  if (n >> 125n !== 1n) return false // outside 2000::/3
  return !V6_BLOCKS.some((block) => inV6(n, block))
}

/** An address in, at the edge of, or just outside a block, as a number within the space. */
function nearBlock<T extends number | bigint>(size: number, blocks: readonly (readonly [T, number])[]) {
  return fc.tuple(fc.constantFrom(...blocks), fc.bigInt({ min: 0n, max: (1n << BigInt(size)) - 1n }), fc.constantFrom('inside', 'first', 'last', 'before', 'after')).map(([[base, bits], random, where]) => {
    const span = 1n << BigInt(size - bits)
    const start = (BigInt(base) >> BigInt(size - bits)) << BigInt(size - bits)
    const top = (1n << BigInt(size)) - 1n
    const at = { inside: start + (random % span), first: start, last: start + span - 1n, before: start - 1n, after: start + span }[where]
    return at < 0n ? 0n : at > top ? top : at
  })
}

const anyV4 = fc.oneof(
  fc.integer({ min: 0, max: 2 ** 32 - 1 }).map(BigInt),
  nearBlock(32, V4_BLOCKS),
  fc.constantFrom('169.254.169.254', '100.100.100.200', '8.8.8.8', '1.1.1.1', '93.184.215.14').map((text) => BigInt(v4(text))),
)
const embedding = (prefix: string) => anyV4.map((n) => v6(prefix) | n)
const anyV6 = fc.oneof(
  fc.bigInt({ min: 0n, max: (1n << 128n) - 1n }),
  fc.bigInt({ min: 0n, max: (1n << 125n) - 1n }).map((n) => (1n << 125n) | n), // 2000::/3
  nearBlock(128, V6_BLOCKS),
  embedding('::ffff:0:0'), // IPv4-mapped
  embedding('64:ff9b::'), // NAT64, well-known prefix
  embedding('64:ff9b:1::'), // NAT64, local use
  embedding('::'), // IPv4-compatible, deprecated
  embedding('2002::').map((n) => ((n & 0xffffffffn) << 80n) | (0x2002n << 112n)), // 6to4 carrying the IPv4 address
  fc.constantFrom('fd00:ec2::254', '::1', '::', 'fe80::1', 'ff02::1', '2606:4700:4700::1111', '2001:4860:4860::8888').map(v6),
)

/**
 * The IPv6 spellings a URL or a resolver may use: all eight groups, compressed by the URL parser, six
 * groups and a dotted tail, and as glibc writes IPv4-mapped and IPv4-compatible addresses.
 */
const v6Spellings = (n: bigint): string[] => {
  const full = v6Full(n)
  const tail = v4Text(Number(n & 0xffffffffn))
  const spellings = [full, new URL(`http://[${full}]/`).hostname.slice(1, -1), `${full.split(':').slice(0, 6).join(':')}:${tail}`]
  if (n >> 32n === 0xffffn) spellings.push(`::ffff:${tail}`)
  if (n >> 32n === 0n) spellings.push(`::${tail}`)
  return spellings
}

describe('the guard agrees with the registries, address by address', () => {
  test('IPv4: public exactly when in no special-purpose block, as an address and as a URL', () => {
    fc.assert(
      fc.property(anyV4, (n) => {
        const text = v4Text(Number(n))
        const expected = publicV4(Number(n))
        expect(isPublicAddress(text)).toBe(expected)
        expect(checkTarget(`https://${text}/hook`, PRODUCTION).length === 0).toBe(expected)
      }),
      { numRuns: 3000 },
    )
  })

  test('IPv6: public exactly when in 2000::/3 and no special-purpose block, or carrying a public IPv4 address', () => {
    fc.assert(
      fc.property(anyV6, (n) => {
        const expected = publicV6(n)
        for (const text of v6Spellings(n)) {
          expect(isPublicAddress(text), text).toBe(expected)
          expect(checkTarget(`https://[${text}]/hook`, PRODUCTION).length === 0, text).toBe(expected)
        }
      }),
      { numRuns: 3000 },
    )
  })

  test("IPv6 as fast-check spells it (compressed, dotted tails) gets the oracle's verdict", () => {
    fc.assert(
      fc.property(fc.ipV6(), (text) => {
        expect(isPublicAddress(text), text).toBe(publicV6(v6(text)))
      }),
      { numRuns: 2000 },
    )
  })

  test('at delivery, a name resolving to the address is delivered exactly when the address is public', async () => {
    const answered: Fetch = async () => new Response(null, { status: 204 })
    await fc.assert(
      fc.asyncProperty(fc.oneof(anyV4.map((n) => v4Text(Number(n))), anyV6.chain((n) => fc.constantFrom(...v6Spellings(n)))), async (address) => {
        const outcome = await deliver('https://hooks.example.com/', EVENT, { ...PRODUCTION, lookup: resolvingTo(address), fetch: answered })
        const expected = address.includes(':') ? publicV6(v6(address)) : publicV4(v4(address))
        expect(outcome.kind, address).toBe(expected ? 'delivered' : 'refused')
      }),
      { numRuns: 500 },
    )
  })
})
