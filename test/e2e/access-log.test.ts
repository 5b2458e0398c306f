import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { rawRequest } from '../support/raw-http.ts'
import { initialisedDataDir, type RunningServer, startServer } from '../support/server.ts'

/**
 * The access log is written in batches: a normal shutdown must still write every line, each one
 * JSON object on its own line. The requests are answered and the server is stopped at once, well
 * within the time lines wait in memory.
 */
describe.each(['SIGTERM', 'SIGINT'] as const)('the access log of the real server stopped with %s', (signal) => {
  let server: RunningServer | undefined
  afterAll(() => server?.stop())

  test('every answered request has its line, none lost at shutdown, one JSON object per line', async () => {
    server = await startServer({ DATA_DIR: initialisedDataDir(), ACCESS_LOG: 'on' })
    const ids = Array.from({ length: 300 }, (_, i) => `log-${signal}-${i}`)
    const statuses = await Promise.all(
      ids.map(async (id) => (await fetch(`${server!.url}/api/v1/health`, { headers: { 'x-request-id': id } })).status),
    )
    expect(new Set(statuses)).toEqual(new Set([401]))
    await server.stop(signal)

    const stdout = server.output().split('\n').filter((line) => line.startsWith('{'))
    const entries = stdout.map((line) => JSON.parse(line) as Record<string, unknown>)
    const logged = entries.filter((entry) => entry.event === 'request' && String(entry.request_id).startsWith(`log-${signal}-`))
    expect(logged.map((entry) => entry.request_id).sort(), `the server's output, last lines:\n${server.output().slice(-2000)}`).toEqual([...ids].sort())
    expect(logged.every((entry) => entry.method === 'GET' && entry.path === '/api/v1/health' && entry.status === 401)).toBe(true)
    expect(entries).toContainEqual(expect.objectContaining({ event: 'stopping', signal }))
    expect(entries.at(-1)).toMatchObject({ event: 'stopped', signal })
  })
})

describe('the access line of each request on the real server, and the request ids it carries', () => {
  let server: RunningServer
  let key = ''
  let keyId = ''
  const entries = () =>
    server
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>)
  /** The access line of the request answered with `id`, once the server has written it (lines go out in batches). */
  const lineOf = async (id: string) => {
    for (let waited = 0; waited < 5000; waited += 50) {
      const found = entries().find((entry) => entry.event === 'request' && entry.request_id === id)
      if (found) return found
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    throw new Error(`no access line for ${id}:\n${server.output()}`)
  }

  beforeAll(async () => {
    server = await startServer({ DATA_DIR: initialisedDataDir('mirador-access-'), ACCESS_LOG: 'on' })
    const cli = async (...args: string[]) => {
      const result = await server.cli(...args, '--json')
      expect(result.code, result.stderr).toBe(0)
      return JSON.parse(result.stdout) as Record<string, string>
    }
    await cli('owner', 'create', '--id', 'logged-admin-p4', '--tier', 'admin')
    await cli('owner', 'create', '--id', 'logged-owner-p4', '--tier', 'pro')
    ;({ key, key_id: keyId } = (await cli('key', 'issue', '--owner', 'logged-owner-p4', '--scopes', 'read', '--actor', 'logged-admin-p4')) as { key: string; key_id: string })
  })
  afterAll(() => server?.stop())

  test('a keyed request: level, duration in milliseconds and the key id, never the key; an anonymous one has no key id', async () => {
    const keyed = await fetch(`${server.url}/api/v1/health`, { headers: { authorization: `Bearer ${key}`, 'x-request-id': 'keyed-1' } })
    expect(keyed.status).toBe(200)
    const refused = await fetch(`${server.url}/api/v1/briefings/investor`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'x-request-id': 'keyed-2' } })
    expect(refused.status).toBe(403) // a read key: its id is still logged
    expect((await fetch(`${server.url}/api/v1/health`, { headers: { 'x-request-id': 'anonymous-1' } })).status).toBe(401)

    const line = await lineOf('keyed-1')
    expect(line).toMatchObject({ event: 'request', level: 'info', method: 'GET', path: '/api/v1/health', status: 200, key_id: keyId })
    expect(typeof line.duration_ms).toBe('number')
    expect(line.duration_ms as number).toBeGreaterThanOrEqual(0)
    expect(line.duration_ms as number).toBeLessThan(10_000)
    expect(await lineOf('keyed-2')).toMatchObject({ level: 'warn', status: 403, key_id: keyId })
    const anonymous = await lineOf('anonymous-1')
    expect(anonymous).toMatchObject({ level: 'warn', status: 401 })
    expect(anonymous).not.toHaveProperty('key_id')
    expect(server.output()).not.toContain(key)
    // The README shows such a line: the same fields, in the same order.
    const readme = readFileSync(join(import.meta.dirname, '../../README.md'), 'utf8')
    const example = JSON.parse(/### Access log[\s\S]*?```json\n(.+)\n```/.exec(readme)![1]!) as Record<string, unknown>
    expect(Object.keys(line)).toEqual(Object.keys(example))
  })

  test("a proxy's request id is echoed and logged; one too long, with spaces or other characters is replaced by the server's own", async () => {
    const nginx = 'f3a9c1d2e4b5a6978812c3d4e5f60718'
    const answer = await fetch(`${server.url}/livez`, { headers: { 'x-request-id': nginx } })
    expect(answer.headers.get('x-request-id')).toBe(nginx)
    expect(await lineOf(nginx)).toMatchObject({ path: '/livez', status: 200 })

    for (const bad of ['x'.repeat(129), 'has spaces in it', 'semi;colon', 'quote"d', 'ünïcode']) {
      const head = `GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Request-Id: ${bad}`
      const replaced = await rawRequest(server.port, head)
      expect(replaced.status).toBe(200)
      const id = replaced.headers.get('x-request-id')!
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
      expect(await lineOf(id)).toMatchObject({ path: '/livez' })
    }
    // A bare CR in the header: the runtime's HTTP parser refuses the request before it reaches the API.
    const split = await rawRequest(server.port, 'GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Request-Id: evil\rSet-Cookie: x=1')
    expect(split.status).toBe(400)
    expect(split.headers.has('set-cookie')).toBe(false)
    expect(server.output()).not.toContain('evil')
  })
})
