import { chmodSync, existsSync, mkdirSync, readdirSync, statSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { eventually, sleep } from '../support/eventually.ts'
import { rawRequest } from '../support/raw-http.ts'
import { type RunningServer, freePort, runServerToExit, startServer, tempDataDir } from '../support/server.ts'

type Json = Record<string, unknown>

function entriesUnder(dir: string): { path: string; mode: number }[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    const stat = statSync(path, { throwIfNoEntry: false })
    if (!stat) return []
    const entry = { path, mode: stat.mode & 0o777 }
    return stat.isDirectory() ? [entry, ...entriesUnder(path)] : [entry]
  })
}

describe('the real server under hostile input and hostile surroundings', () => {
  const dataDir = join(tempDataDir(), 'data')
  let server: RunningServer
  let key = ''

  beforeAll(async () => {
    server = await startServer({ DATA_DIR: dataDir, DEMO_SEED: 'on', DEMO_LISTINGS: '112' })
    await server.cli('owner', 'create', '--id', 'acme', '--tier', 'enterprise')
    key = (JSON.parse((await server.cli('key', 'issue', '--owner', 'acme', '--scopes', 'read,write', '--actor', 'acme', '--json')).stdout) as { key: string }).key
    await eventually('the key reaches the server', async () => (await fetch(`${server.url}/api/v1/health`, { headers: { authorization: `Bearer ${key}` } })).ok)
  })
  afterAll(() => server?.stop())

  const post = (headers: string[], body: string) =>
    rawRequest(server.port, ['POST /api/v1/briefings/investor HTTP/1.1', `Host: 127.0.0.1:${server.port}`, ...headers].join('\r\n'), body)

  test('a body of any size gets the JSON contract: 401 without a key, 413 payload_too_large with one', async () => {
    const huge = 'x'.repeat(3 * 1024 * 1024)
    const framing = ['Content-Type: application/json', `Content-Length: ${huge.length}`]
    const anonymous = await post(framing, huge)
    expect(anonymous.status).toBe(401)
    expect(anonymous.headers.get('x-request-id')).toBeTruthy()
    expect(JSON.parse(anonymous.body)).toMatchObject({ ok: false, error: 'auth_required' })

    const keyed = await post([`Authorization: Bearer ${key}`, ...framing], huge)
    expect(keyed.status).toBe(413)
    expect(keyed.headers.get('x-request-id')).toBeTruthy()
    expect(JSON.parse(keyed.body)).toMatchObject({ ok: false, error: 'payload_too_large' })
  })

  test('a chunked body that grows past 16 KiB is cut off with 413 payload_too_large', async () => {
    const chunk = 'x'.repeat(4096)
    const chunked = `${`1000\r\n${chunk}\r\n`.repeat(5)}0\r\n\r\n`
    const response = await post([`Authorization: Bearer ${key}`, 'Content-Type: application/json', 'Transfer-Encoding: chunked'], chunked)
    expect(response.status).toBe(413)
    expect(JSON.parse(response.body)).toMatchObject({ ok: false, error: 'payload_too_large' })
  })

  test('a client that goes away mid-body is logged once as a client abort, never as a server error', async () => {
    const before = server.output().length
    await new Promise<void>((done) => {
      const socket = connect(server.port, '127.0.0.1', () => {
        socket.write(
          [
            'POST /api/v1/briefings/investor HTTP/1.1',
            `Host: 127.0.0.1:${server.port}`,
            `Authorization: Bearer ${key}`,
            'Content-Type: application/json',
            'Content-Length: 10000',
            '',
            '{"zone":"Zona 1",',
          ].join('\r\n'),
        )
        setTimeout(() => socket.destroy(), 300)
      })
      socket.on('close', () => done())
    })
    await eventually('the abort is logged', () => server.output().slice(before).includes('client_aborted'))
    await sleep(200)
    const logged = server.output().slice(before)
    expect(logged.match(/client_aborted/g)).toHaveLength(1)
    expect(logged).not.toContain('unhandled_error')
    expect(logged).not.toContain('"level":"error"')
    expect(logged).not.toMatch(/"status":5\d\d/)
  })

  test('messages quote client input cut to a sane length (8 KB content type, 4,000-character path and persona)', async () => {
    const longType = await post([`Authorization: Bearer ${key}`, `Content-Type: text/${'x'.repeat(8000)}`, 'Content-Length: 2'], '{}')
    const longPath = await rawRequest(server.port, `GET /api/v1/${'p'.repeat(4000)} HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${key}`)
    const longPersona = await rawRequest(
      server.port,
      `POST /api/v1/briefings/${'q'.repeat(4000)} HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 2`,
      '{}',
    )
    for (const [response, status, error] of [
      [longType, 400, 'invalid_request'],
      [longPath, 404, 'not_found'],
      [longPersona, 404, 'not_found'],
    ] as const) {
      expect(response.status).toBe(status)
      const body = JSON.parse(response.body) as Json
      expect(body).toMatchObject({ ok: false, error })
      expect(String(body.message).length).toBeLessThan(200)
      expect(response.body.length).toBeLessThan(600)
    }
  })

  test('a Host header that is missing or malformed is refused with 400 invalid_request, as HTTP/1.1 requires', async () => {
    for (const head of ['GET /api/v1/zones HTTP/1.1\r\nHost: a/b', 'GET /api/v1/zones HTTP/1.1\r\nHost: ', 'GET /api/v1/zones HTTP/1.0']) {
      const response = await rawRequest(server.port, `${head}\r\nAuthorization: Bearer ${key}`)
      expect(response.status, head).toBe(400)
      expect(JSON.parse(response.body), head).toMatchObject({ ok: false, error: 'invalid_request', details: [{ field: 'host' }] })
    }
  })

  test('the data directory is created 0700 and nothing in it is open to other users', () => {
    expect(statSync(dataDir).mode & 0o777).toBe(0o700)
    const entries = entriesUnder(dataDir)
    expect(entries.length).toBeGreaterThan(100)
    expect(entries.filter((entry) => entry.mode & 0o077).map((entry) => `${entry.path} ${entry.mode.toString(8)}`)).toEqual([])
  })

  test('a second server on the same data directory ends at once with one line and exit code 1', async () => {
    const second = await runServerToExit({ DATA_DIR: dataDir, PORT: String(await freePort()) })
    expect(second.code).toBe(1)
    expect(second.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^mirador: .*in use by another server \(process \d+\)/)])
    expect(second.stdout).toBe('')
  })

  test('a port in use ends the start with one line and exit code 1, before a store is created', async () => {
    const fresh = join(tempDataDir(), 'data')
    const taken = await runServerToExit({ DATA_DIR: fresh, PORT: String(server.port), DEMO_SEED: 'on' })
    expect(taken.code).toBe(1)
    expect(taken.stderr.trim().split('\n')).toEqual([`mirador: port ${server.port} on 127.0.0.1 is in use; stop what listens there or set PORT`])
    expect(existsSync(join(fresh, 'pglite'))).toBe(false)
  })

  test('a metrics port in use ends the start with one line and exit code 1, the lock given back and no store created', async () => {
    const fresh = join(tempDataDir(), 'data')
    const taken = await runServerToExit({ DATA_DIR: fresh, PORT: String(await freePort()), METRICS_PORT: String(server.port) })
    expect(taken.code).toBe(1)
    expect(taken.stderr.trim().split('\n')).toEqual([expect.stringMatching(new RegExp(`^mirador: cannot serve metrics on 127.0.0.1:${server.port}: .*; stop what listens there or set METRICS_PORT$`))])
    expect(existsSync(join(fresh, 'mirador.lock'))).toBe(false)
    expect(existsSync(join(fresh, 'pglite'))).toBe(false)
  })

  test('an existing data directory open to other users is reported at start', async () => {
    const loose = join(tempDataDir(), 'shared')
    mkdirSync(loose)
    chmodSync(loose, 0o755)
    const started = await startServer({ DATA_DIR: loose })
    await started.stop()
    expect(started.output()).toMatch(/"event":"data_dir_permissions".*"mode":"0755"/)
  })
})
