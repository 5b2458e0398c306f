import { describe, expect, test } from 'vitest'
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { bufferedJsonLogger, writeAllLater } from '../../src/runtime/log.ts'

const capture = () => {
  const out: string[] = []
  const err: string[] = []
  return { output: { out: (text: string) => out.push(text), err: (text: string) => err.push(text) }, out, err }
}
const lines = (writes: string[]) => writes.join('').split('\n').filter(Boolean)

describe('the server log: JSON lines written in batches', () => {
  test('info lines wait for flush, then go out in one write, one JSON object per line: time, event, fields', () => {
    const { output, out } = capture()
    let now = Date.parse('2031-05-06T10:00:00.000Z')
    const log = bufferedJsonLogger(output, () => now)
    log.info('request', { request_id: 'r-1', method: 'GET', path: '/api/v1/health', status: 401 })
    now += 1
    log.info('listening', { url: 'http://127.0.0.1:8080' })
    expect(out).toEqual([])
    log.flush()
    expect(out).toHaveLength(1)
    expect(out[0]!.endsWith('\n')).toBe(true)
    expect(lines(out)).toEqual([
      '{"t":"2031-05-06T10:00:00.000Z","event":"request","request_id":"r-1","method":"GET","path":"/api/v1/health","status":401}',
      '{"t":"2031-05-06T10:00:00.001Z","event":"listening","url":"http://127.0.0.1:8080"}',
    ])
    log.flush()
    expect(out).toHaveLength(1)
  })

  test('a line stays one line whatever its fields hold; missing fields are left out, an event without fields is complete', () => {
    const { output, out } = capture()
    const log = bufferedJsonLogger(output, () => 0)
    log.info('request', { path: '/a"b\n{c}', stack: undefined })
    log.info('stopping', {})
    log.flush()
    const [first, second] = lines(out).map((line) => JSON.parse(line))
    expect(first).toEqual({ t: '1970-01-01T00:00:00.000Z', event: 'request', path: '/a"b\n{c}' })
    expect(second).toEqual({ t: '1970-01-01T00:00:00.000Z', event: 'stopping' })
  })

  test('a batch past 64 KiB is written at once, so memory stays bounded between flushes', () => {
    const { output, out } = capture()
    const log = bufferedJsonLogger(output, () => 0)
    for (let i = 0; i < 1000; i++) log.info('request', { request_id: `r-${i}`, path: `/api/v1/${'p'.repeat(100)}` })
    expect(out.length).toBeGreaterThan(0)
    expect(out.every((batch) => batch.length <= 64 * 1024 + 300)).toBe(true)
    log.flush()
    const ids = lines(out).map((line) => (JSON.parse(line) as { request_id: string }).request_id)
    expect(ids).toEqual(Array.from({ length: 1000 }, (_, i) => `r-${i}`))
  })

  test('an error is written at once, after the lines logged before it, marked level error', () => {
    const { output, out, err } = capture()
    const log = bufferedJsonLogger(output, () => 0)
    log.info('request', { status: 200 })
    log.error('unhandled_error', { error: 'TypeError: x' })
    expect(lines(out)).toEqual(['{"t":"1970-01-01T00:00:00.000Z","event":"request","status":200}'])
    expect(lines(err)).toEqual(['{"t":"1970-01-01T00:00:00.000Z","level":"error","event":"unhandled_error","error":"TypeError: x"}'])
  })
})

describe('the access log written in the background', () => {
  /** An output whose background writes complete when the test says. */
  const later = () => {
    const out: string[] = []
    const err: string[] = []
    const pending: { text: string; done(): void }[] = []
    const output = {
      out: (text: string) => out.push(text),
      err: (text: string) => err.push(text),
      outLater: (text: string) => new Promise<void>((resolve) => pending.push({ text, done: () => (out.push(text), resolve()) })),
    }
    return { output, out, err, pending }
  }

  test('one batch at a time, in order: lines logged during a write wait for it; drain settles once all is written', async () => {
    const { output, out, pending } = later()
    const log = bufferedJsonLogger(output, () => 0)
    log.info('request', { n: 1 })
    log.flush()
    expect(pending).toHaveLength(1)
    log.info('request', { n: 2 })
    log.flush()
    expect(pending).toHaveLength(1)
    let drained = false
    const draining = log.drain().then(() => (drained = true))
    pending[0]!.done()
    await new Promise((resolve) => setTimeout(resolve, 0))
    expect(pending).toHaveLength(2)
    expect(drained).toBe(false)
    pending[1]!.done()
    await draining
    expect(lines(out).map((line) => (JSON.parse(line) as { n: number }).n)).toEqual([1, 2])
  })

  test('at exit what waits is written at once; an error during a write does not jump ahead of the batch being written', () => {
    const { output, out, err, pending } = later()
    const log = bufferedJsonLogger(output, () => 0)
    log.info('request', { n: 1 })
    log.flush()
    log.info('request', { n: 2 })
    log.error('unhandled_error', { error: 'x' })
    expect(out).toEqual([])
    expect(lines(err)).toHaveLength(1)
    pending[0]!.done()
    log.flushNow()
    expect(lines(out).map((line) => (JSON.parse(line) as { n: number }).n)).toEqual([1, 2])
  })

  test('writeAllLater writes every byte to a file descriptor, in the background', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mirador-log-'))
    const file = join(dir, 'out.log')
    const fd = openSync(file, 'w')
    const text = Array.from({ length: 20_000 }, (_, i) => `{"n":${i},"é":"ü"}\n`).join('')
    const written = writeAllLater(fd, text)
    await written
    closeSync(fd)
    expect(readFileSync(file, 'utf8')).toBe(text)
    rmSync(dir, { recursive: true })
  })
})
