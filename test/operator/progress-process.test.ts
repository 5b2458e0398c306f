import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { generateDemoFeed } from '../../src/domain/demo/market.ts'
import { eventually } from '../support/eventually.ts'
import { initialisedDataDir, type RunningServer, startServer } from '../support/server.ts'
import { runCliInTerminal } from '../support/terminal.ts'

/** The lines of a terminal's output as drawn: each `\r` starts the line again (the bar's updates). */
const drawnLines = (output: string): string[] => output.split(/\r?\n/).flatMap((line) => line.split('\r')).filter((l) => l.trim() !== '')
/** The CLI's `[…]  42% 4200/10000 lines, 3,000 lines/s, 2 s left` */
const withRateAndTimeLeft = (label: string, unit: string) => new RegExp(`^${label} \\[[#.]{30}\\] +\\d+% \\d+/\\d+ ${unit}, [\\d,]+ ${unit}/s, [\\d hmins]+ left`)

/**
 * Progress and Ctrl-C as an operator at a terminal sees them, through a running server: the bar
 * counts lines or events with a rate and the time left; Ctrl-C on `ingest` ends the bar's line and
 * prints what was recorded; on a rebuild, it says the server goes on and how to follow it.
 */
describe('progress and Ctrl-C on a terminal, through the server', () => {
  let server: RunningServer
  let feed: string
  let lines: number
  beforeAll(async () => {
    const dir = initialisedDataDir()
    server = await startServer({ DATA_DIR: dir })
    const records = generateDemoFeed({ seed: 'progress', listings: 6000, anchor: new Date('2026-11-01T00:00:00Z') })
    lines = records.length
    feed = join(dir, 'big-feed.ndjson')
    writeFileSync(feed, `${records.map((r) => JSON.stringify(r)).join('\n')}\n`)
  })
  afterAll(() => server?.stop())

  test('Ctrl-C during ingest ends the bar line and prints what was recorded up to there (exit 130); the next run records the rest', async () => {
    const run = runCliInTerminal(['ingest', feed], server.env)
    // Interrupted once the bar shows a rate (after its first half second), however fast the machine.
    await run.waitFor(new RegExp(withRateAndTimeLeft('ingest big-feed\\.ndjson', 'lines').source.slice(1)))
    run.type('\x03')
    const code = await run.exited
    const output = run.output()
    expect(code, output).toBe(130)
    const summary = output.match(/big-feed\.ndjson: interrupted \(Ctrl-C\) after line (\d+): read (\d+), new (\d+), changed (\d+), unchanged 0, rejected 0 \([\d.]+ s\)/)
    expect(summary, output).not.toBeNull()
    const through = Number(summary![1])
    expect(Number(summary![2])).toBe(through)
    expect(Number(summary![3]) + Number(summary![4])).toBe(through)
    expect(through).toBeLessThan(lines)
    // The bar's line was ended before anything else was said: no line holds a bar and a message.
    const drawn = drawnLines(output)
    expect(drawn.filter((l) => /\[[#.]{30}\]/.test(l) && /interrupted/.test(l))).toEqual([])
    expect(drawn.some((l) => withRateAndTimeLeft('ingest big-feed\\.ndjson', 'lines').test(l)), output).toBe(true)

    // Exactly the lines counted were recorded: those are unchanged now, the rest are not.
    const rest = await server.cli('ingest', feed, '--json')
    expect(rest.code, rest.stderr).toBe(0)
    const again = JSON.parse(rest.stdout) as { read: number; new: number; changed: number; unchanged: number; rejected: number }
    expect(again).toMatchObject({ read: lines, unchanged: through, rejected: 0 })
    expect(again.new + again.changed).toBe(lines - through)
  }, 180_000)

  test('a rebuild shows its rate and time left; Ctrl-C says the server goes on with it and how to follow it (exit 130)', async () => {
    // The whole feed recorded (a no-op after the spec above): a rebuild long enough to show a rate.
    expect((await server.cli('ingest', feed, '--json')).code).toBe(0)
    const whole = runCliInTerminal(['projections', 'rebuild', 'listings'], server.env)
    expect(await whole.exited, whole.output()).toBe(0)
    expect(drawnLines(whole.output()).filter((l) => withRateAndTimeLeft('rebuild listings', 'events').test(l)), whole.output()).not.toEqual([])

    const stopped = runCliInTerminal(['projections', 'rebuild', 'listings'], server.env)
    await stopped.waitFor(/rebuild listings \[[#.]+\] +\d+% [1-9]\d*\/\d+ events/)
    stopped.type('\x03')
    expect(await stopped.exited, stopped.output()).toBe(130)
    expect(stopped.output()).toContain('interrupted: the rebuild goes on in the server (Ctrl-C does not cancel it); follow it with `projections status`')
    // The build the CLI left went on to the end: the newest generation of listings is the live one.
    await eventually(
      'the rebuild went live',
      async () => {
        const status = await server.cli('projections', 'status', '--json')
        const { generations } = JSON.parse(status.stdout) as { generations: { projection: string; generation: string; state: string }[] }
        const listings = generations.filter((g) => g.projection === 'listings')
        const minor = (g: { generation: string }) => Number(g.generation.split('.')[1])
        const newest = listings.reduce((a, b) => (minor(b) > minor(a) ? b : a))
        return minor(newest) === 3 && newest.state === 'live'
      },
      120_000,
    )
  }, 240_000)
})
