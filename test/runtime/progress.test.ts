import { describe, expect, test } from 'vitest'
import { terminalProgress } from '../../src/runtime/progress.ts'

/** Progress on a fake terminal (`isTTY` or not): what it wrote, and a clock the test moves by setting `clock.now`. */
const fakeTerminal = (isTTY: boolean) => {
  const written: string[] = []
  const clock = { now: 0 }
  const stream = { isTTY, write: (text: string) => written.push(text) } as unknown as NodeJS.WriteStream
  return { bar: terminalProgress(stream, () => clock.now), written, clock }
}

describe('progress on a terminal', () => {
  test('a bar with the rate and the time left when the update names a unit', () => {
    const { bar, written, clock } = fakeTerminal(true)
    bar.progress({ label: 'rebuild listings', done: 0, total: 100_000, unit: 'events' })
    clock.now = 2000
    bar.progress({ label: 'rebuild listings', done: 25_000, total: 100_000, unit: 'events' })
    expect(written.at(-1)).toBe('\rrebuild listings [########......................]  25% 25000/100000 events, 12,500 events/s, 6 s left\x1b[K')
    clock.now = 10_000
    bar.progress({ label: 'rebuild listings', done: 100_000, total: 100_000, unit: 'events' })
    expect(written.at(-1)).toContain('100% 100000/100000 events, 10,000 events/s\x1b[K')
    bar.done()
    expect(written.at(-1)).toBe('\n')
  })

  test('a new label starts its own rate; no rate before half a second', () => {
    const { bar, written, clock } = fakeTerminal(true)
    bar.progress({ label: 'rebuild owners', done: 10, total: 10, unit: 'events' })
    clock.now = 5000
    bar.progress({ label: 'rebuild listings', done: 0, total: 600_000, unit: 'events' })
    clock.now = 65_000
    bar.progress({ label: 'rebuild listings', done: 6000, total: 600_000, unit: 'events' })
    expect(written.at(-1)).toContain('100 events/s, 1 h 39 min left')
    bar.progress({ label: 'ingest', done: 5, total: 10, unit: 'lines' })
    expect(written.at(-1)).toMatch(/50% 5\/10 lines\x1b\[K$/)
  })

  test('nothing at all when the output is not a terminal (the command prints its summary line)', () => {
    const { bar, written } = fakeTerminal(false)
    bar.progress({ label: 'rebuild listings', done: 1, total: 2, unit: 'events' })
    bar.done()
    expect(written).toEqual([])
  })
})
