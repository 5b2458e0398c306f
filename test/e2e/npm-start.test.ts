import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { describe, expect, test } from 'vitest'
import { eventually } from '../support/eventually.ts'
import { freePort, tempDataDir } from '../support/server.ts'

const ROOT = resolve(import.meta.dirname, '../..')

/** The processes below `pid`, with their command lines (Linux /proc). */
function descendants(pid: number): { pid: number; command: string }[] {
  let children: number[] = []
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)
  } catch {
    return []
  }
  return children.flatMap((child) => {
    let command = ''
    try {
      command = readFileSync(`/proc/${child}/cmdline`, 'utf8').replaceAll('\0', ' ').trim()
    } catch {}
    return [{ pid: child, command }, ...descendants(child)]
  })
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

describe('npm start under a supervisor', () => {
  test('SIGTERM to npm reaches the server: it stops cleanly (exit 0), leaves no orphan, and the access log is flushed', async () => {
    const port = await freePort()
    const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: tempDataDir('mirador-npm-start-'), PORT: String(port), HOST: '127.0.0.1', DEMO_SEED: 'off', ACCESS_LOG: 'on' }
    for (const name of ['DATABASE_URL', 'REDIS_URL', 'npm_lifecycle_event']) delete env[name]
    const npm = spawn('npm', ['start'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    npm.stdout.on('data', (chunk) => (output += chunk))
    npm.stderr.on('data', (chunk) => (output += chunk))
    // 'close', not 'exit': npm may exit before the last lines the server wrote into the shared pipes are
    // read; 'close' comes once every writer of them is gone and all they wrote was read.
    const exited = new Promise<{ code: number | null; signal: string | null }>((done) => npm.once('close', (code, signal) => done({ code, signal })))
    let serverPid: number | undefined
    try {
      await eventually('the server listens', () => output.includes('"event":"listening"'), 60_000)
      // The deepest one: a shell between npm and Bun would be named after the script as well.
      const server = descendants(npm.pid!).filter((p) => p.command.includes('src/main.ts')).at(-1)!
      expect(server, JSON.stringify(descendants(npm.pid!))).toBeDefined()
      serverPid = server.pid

      // Answered right before the signal: its access-log line is still in the buffer (flushed every 100 ms).
      const answered = await fetch(`http://127.0.0.1:${port}/api/v1/health`, { headers: { 'x-request-id': 'last-before-sigterm' } })
      expect(answered.status).toBe(401)
      npm.kill('SIGTERM')
      expect(await exited).toEqual({ code: 0, signal: null })
      await eventually('the server process is gone', () => !alive(server.pid), 10_000)
      const lines = output.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Record<string, unknown>)
      expect(lines).toContainEqual(expect.objectContaining({ event: 'request', request_id: 'last-before-sigterm', status: 401 }))
      expect(lines).toContainEqual(expect.objectContaining({ event: 'stopping', signal: 'SIGTERM' }))
      expect(lines.at(-1)).toMatchObject({ event: 'stopped' })
    } finally {
      // A failed run leaves nothing behind either.
      if (serverPid !== undefined && alive(serverPid)) process.kill(serverPid, 'SIGKILL')
      if (npm.exitCode === null) npm.kill('SIGKILL')
    }
  }, 90_000)
})
