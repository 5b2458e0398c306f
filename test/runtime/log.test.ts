import { describe, expect, test } from 'vitest'
import { bufferedJsonLogger } from '../../src/runtime/log.ts'

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
