import { once } from 'node:events'
import { createWriteStream } from 'node:fs'
import { rename, rm } from 'node:fs/promises'
import type { Writable } from 'node:stream'
import { Type } from '@sinclair/typebox'
import type { RecordedEvent } from '../../eventstore/port.ts'
import { eventLine, headerLine, trailerLine } from '../../eventstore/transfer.ts'
import type { Progress } from '../../runtime/progress.ts'
import { AppError, fail } from '../../shared/errors.ts'
import { clientCommand, param } from '../command.ts'
import { type Outcome, type Send, errorLine } from '../outcome.ts'
import { eventsRead } from './events-read.ts'

type Exported = {
  out: string
  events: number
  seconds: number
  events_per_second: number
  /** Stdout was closed by its reader (`events export | head`): the export stopped there, as asked. */
  reader_closed?: true
}

/** Events per `events read` page: one round trip each. */
const EXPORT_PAGE = 2000

export const eventsPerSecond = (events: number, seconds: number) => (seconds > 0 ? Math.round(events / seconds) : events)

/** Writes with backpressure: waits for the stream to drain when its buffer is full. */
async function write(out: Writable, text: string): Promise<void> {
  if (!out.write(text)) await once(out, 'drain')
}

/**
 * Pages through the log with `events read` (in the server over its socket, or on the store this
 * process opened), writing one line per event as it goes: memory stays flat whatever the size of
 * the log. A file is written as FILE.partial and renamed when complete, so FILE is never a
 * truncated export; without a path the lines go to stdout.
 */
export async function exportEventsThrough(send: Send, path: string | undefined, progress: Progress, now = new Date()): Promise<Outcome> {
  const started = Date.now()
  const partial = path ? `${path}.partial` : undefined
  const out: Writable = partial ? createWriteStream(partial, { encoding: 'utf8' }) : process.stdout
  const failed = new Promise<never>((_, reject) => out.once('error', reject))
  failed.catch(() => {})
  let events = 0
  try {
    await Promise.race([write(out, `${headerLine(now)}\n`), failed])
    for (let after = 0; ; ) {
      const outcome = await send(eventsRead.name, { after, limit: EXPORT_PAGE }, () => {})
      if (!outcome.ok) return outcome
      const page = outcome.result as { events: RecordedEvent[]; head: number }
      if (page.events.length === 0) break
      await Promise.race([write(out, page.events.map((e) => `${eventLine(e)}\n`).join('')), failed])
      events += page.events.length
      after = page.events.at(-1)!.position
      progress({ label: 'export', done: after, total: Math.max(after, page.head), unit: 'events' })
    }
    await Promise.race([write(out, `${trailerLine(events)}\n`), failed])
    if (partial) {
      await Promise.race([new Promise<void>((resolve) => out.end(resolve)), failed])
      await rename(partial, path!)
    }
  } catch (error) {
    if (partial) {
      out.destroy()
      await rm(partial, { force: true })
    } else if ((error as NodeJS.ErrnoException).code === 'EPIPE') {
      const seconds = (Date.now() - started) / 1000
      return { ok: true, result: { out: '-', events, seconds, events_per_second: eventsPerSecond(events, seconds), reader_closed: true } satisfies Exported }
    }
    return errorLine(error instanceof AppError ? error : fail.invalidRequest(`cannot write ${path ?? 'stdout'}: ${(error as Error).message}`))
  }
  const seconds = (Date.now() - started) / 1000
  const result: Exported = { out: path ?? '-', events, seconds, events_per_second: eventsPerSecond(events, seconds) }
  return { ok: true, result }
}

export const eventsExport = clientCommand({
  name: 'events export',
  summary: 'write the whole event log as NDJSON (docs/events-file.md): a backup, or a move to another store',
  params: {
    out: param(Type.Optional(Type.String()), {
      placeholder: 'FILE',
      help: 'where to write it, relative to where you run the command (default: stdout)',
      path: true,
    }),
  },
  notes: 'The file is written as FILE.partial and renamed when complete.',
  flow: (send, a, terminal) => exportEventsThrough(send, a.out, terminal.progress),
  // Nothing to say to a reader that closed stdout: the pipeline got what it asked for.
  output: (r: Exported) =>
    r.reader_closed ? '' : `exported ${r.events} events to ${r.out === '-' ? 'stdout' : r.out} (${r.seconds} s, ${r.events_per_second} events/s)`,
  // Exporting to stdout: the summary goes to stderr, after the data.
  resultStream: (a) => (a.out === undefined ? 'stderr' : 'stdout'),
})
