import net from 'node:net'

/**
 * A TCP proxy in front of the real Redis that can stall or cut the link, so outage tests exercise the
 * real client and server without stopping the Redis that other suites share.
 *  - forward: bytes flow both ways.
 *  - stall:   the proxy stops reading; commands wait in socket buffers (a hung server, not a lost packet)
 *             and flow again on `forward()`, as TCP would deliver them.
 *  - down:    open connections are cut and new ones are closed on arrival (Redis down).
 */
export type TcpProxy = { url: string; forward(): void; stall(): void; down(): void; close(): Promise<void> }

export async function startTcpProxy(targetUrl: string): Promise<TcpProxy> {
  const target = new URL(targetUrl)
  let mode: 'forward' | 'stall' | 'down' = 'forward'
  const links = new Set<{ client: net.Socket; upstream: net.Socket }>()

  const server = net.createServer((client) => {
    if (mode === 'down') return void client.destroy()
    const upstream = net.connect(Number(target.port || 6379), target.hostname)
    const link = { client, upstream }
    links.add(link)
    client.pipe(upstream)
    upstream.pipe(client)
    if (mode === 'stall') client.pause()
    const cut = () => {
      links.delete(link)
      client.destroy()
      upstream.destroy()
    }
    client.on('error', cut).on('close', cut)
    upstream.on('error', cut).on('close', cut)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as net.AddressInfo

  const down = () => {
    mode = 'down'
    for (const { client, upstream } of links) {
      client.destroy()
      upstream.destroy()
    }
    links.clear()
  }
  return {
    url: `redis://127.0.0.1:${port}${target.pathname}`,
    forward() {
      mode = 'forward'
      for (const { client } of links) client.resume()
    },
    stall() {
      mode = 'stall'
      for (const { client } of links) client.pause()
    },
    down,
    async close() {
      down()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}
