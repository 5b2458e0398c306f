import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { newWebhookSecret, signedHeaders } from '../../src/webhooks/signature.ts'
import { BUN, childEnv, runProgram } from '../support/server.ts'

/**
 * examples/webhook-receiver.ts, run as its header says (Bun, and Node), receiving deliveries signed
 * by src/webhooks/signature.ts: what a subscriber who copies it gets. And the signer itself gives the
 * same headers on each runtime the server runs on.
 */

const ROOT = resolve(import.meta.dirname, '../..')
const NODE = join(ROOT, 'node_modules/.bin/node')
const DENO = join(ROOT, 'node_modules/.bin/deno')
const RECEIVER = 'examples/webhook-receiver.ts'
const COMMANDS = {
  bun: { program: BUN, args: [RECEIVER] },
  node: { program: NODE, args: ['--experimental-transform-types', '--disable-warning=ExperimentalWarning', RECEIVER] },
}

type Receiver = { url: string; child: ChildProcess; stdout: () => string; stderr: () => string }

/** Starts the receiver with `secret` on a port of its choosing; resolves once it says where it listens. */
function startReceiver(runtime: keyof typeof COMMANDS, secret: string): Promise<Receiver> {
  const { program, args } = COMMANDS[runtime]
  const child = spawn(program, args, { cwd: ROOT, env: childEnv({ WEBHOOK_SECRET: secret, PORT: '0' }), stdio: ['ignore', 'pipe', 'pipe'] })
  let [stdout, stderr] = ['', '']
  child.stderr!.on('data', (chunk) => (stderr += chunk))
  return new Promise((resolveStart, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`the receiver did not listen within 30 s:\n${stdout}${stderr}`))
    }, 30_000)
    child.once('exit', (code) => reject(new Error(`the receiver exited (${code}):\n${stdout}${stderr}`)))
    child.stdout!.on('data', (chunk) => {
      stdout += chunk
      const listening = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(stdout)
      if (!listening) return
      clearTimeout(timer)
      resolveStart({ url: listening[1]!, child, stdout: () => stdout, stderr: () => stderr })
    })
  })
}

/** Stops the receiver (SIGTERM) and waits for it to exit; its exit code. */
function stopReceiver(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode)
  return new Promise((resolveStop) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
    child.once('exit', (code) => {
      clearTimeout(timer)
      resolveStop(code)
    })
    child.kill('SIGTERM')
  })
}

/** Waits until `check` holds, for a few seconds at most, looking every 20 ms. */
async function eventually(check: () => boolean, what: string): Promise<void> {
  for (let waited = 0; !check(); waited += 20) {
    if (waited > 5_000) throw new Error(`${what}: not within 5 s`)
    await new Promise((wake) => setTimeout(wake, 20))
  }
}

const secret = newWebhookSecret((n) => randomBytes(n))
const nowS = () => Math.floor(Date.now() / 1000)
const event = (n: number) => JSON.stringify({ type: 'zone.statistics_changed', data: { country: 'GT', zone: 'Zona 7', median_ppm2_usd: 1000 + n, n } })

for (const runtime of ['bun', 'node'] as const) {
  describe(`${RECEIVER} on ${runtime}`, () => {
    let receiver: Receiver
    const post = async (body: string, headers: Record<string, string>) => (await fetch(receiver.url, { method: 'POST', body, headers })).status
    const printed = (id: string) => receiver.stdout().split('\n').filter((line) => line.startsWith(`{"id":"${id}"`))

    beforeAll(async () => {
      receiver = await startReceiver(runtime, secret)
    })
    afterAll(async () => {
      if (receiver) expect(await stopReceiver(receiver.child)).toBe(0)
    })

    test('a delivery signed with its secret is 204 and printed; its retry (same webhook-id) is 204 and not printed again', async () => {
      const body = event(1)
      expect(await post(body, signedHeaders(secret, `msg_${runtime}_1`, nowS(), body))).toBe(204)
      // A retry is signed anew, later, with the same id.
      expect(await post(body, signedHeaders(secret, `msg_${runtime}_1`, nowS() + 1, body))).toBe(204)
      const next = event(2)
      expect(await post(next, signedHeaders(secret, `msg_${runtime}_2`, nowS(), next))).toBe(204)
      await eventually(() => printed(`msg_${runtime}_2`).length === 1, 'the second delivery printed')
      expect(printed(`msg_${runtime}_1`).map((line) => JSON.parse(line))).toEqual([{ id: `msg_${runtime}_1`, event: JSON.parse(body) }])
    })

    test('badly signed deliveries are 401: another secret, a changed body, an old timestamp, no signature; a signed body that is not JSON is 400', async () => {
      const body = event(3)
      const id = `msg_${runtime}_3`
      const other = newWebhookSecret((n) => randomBytes(n))
      const good = signedHeaders(secret, id, nowS(), body)
      expect(await post(body, signedHeaders(other, id, nowS(), body))).toBe(401)
      expect(await post(body.replace('1003', '1004'), good)).toBe(401)
      expect(await post(body, signedHeaders(secret, id, nowS() - 600, body))).toBe(401)
      expect(await post(body, { 'webhook-id': id, 'webhook-timestamp': String(nowS()) })).toBe(401)
      expect(await post('not json', signedHeaders(secret, `msg_${runtime}_4`, nowS(), 'not json'))).toBe(400)
      expect((await fetch(receiver.url)).status).toBe(405)
      // None of them was taken: the good one still is, once.
      expect(printed(id)).toEqual([])
      expect(await post(body, good)).toBe(204)
      await eventually(() => printed(id).length === 1, 'the good delivery printed')
      expect(receiver.stderr()).toContain('refused a delivery: 401')
    })
  })
}

test('the receiver refuses to start without a secret', async () => {
  const run = await runProgram(BUN, [RECEIVER], { WEBHOOK_SECRET: '' })
  expect([run.code, run.stderr]).toEqual([2, expect.stringContaining('set WEBHOOK_SECRET')])
})

test('the signer gives the same headers on Bun, Deno and Node (node:crypto on each)', async () => {
  const code = `import { signedHeaders } from '${join(ROOT, 'src/webhooks/signature.ts')}'
    console.log(JSON.stringify(signedHeaders(${JSON.stringify(secret)}, 'msg_1', 1795000000, 'Zona 7 · ñ · 🏠')))`
  const expected = signedHeaders(secret, 'msg_1', 1795000000, 'Zona 7 · ñ · 🏠')
  const runs = await Promise.all([
    runProgram(BUN, ['-e', code], {}),
    runProgram(DENO, ['eval', code], {}),
    runProgram(NODE, ['--experimental-transform-types', '--disable-warning=ExperimentalWarning', '--input-type=module', '-e', code], {}),
  ])
  for (const run of runs) expect([run.code, JSON.parse(run.stdout)], run.stderr).toEqual([0, expected])
})
