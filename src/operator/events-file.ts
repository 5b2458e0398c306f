import { once } from 'node:events'
import { createReadStream, createWriteStream } from 'node:fs'
import { open, rename, rm, stat } from 'node:fs/promises'
import { createInterface } from 'node:readline'
import type { Writable } from 'node:stream'
import { eventLine, headerLine, type ImportStep, parseLine, trailerLine } from '../eventstore/transfer.ts'
import type { RecordedEvent } from '../eventstore/port.ts'
import { AppError, invalidRequest } from '../shared/errors.ts'
import type { Progress } from './commands.ts'
import { type OperatorLine, errorLine } from './socket-handler.ts'

type Outcome = Extract<OperatorLine, { ok: boolean }>
type Run = (name: string, args: unknown, progress: Progress) => Promise<Outcome>

/** Events per `events read` page and lines per `events import lines` batch: one round trip each. */
export const EXPORT_PAGE = 2000
export const IMPORT_BATCH = 1000

const rate = (events: number, seconds: number) => (seconds > 0 ? Math.round(events / seconds) : events)

/** Writes with backpressure: waits for the stream to drain when its buffer is full. */
async function write(out: Writable, text: string): Promise<void> {
  if (!out.write(text)) await once(out, 'drain')
}

/**
 * `events export [--out FILE]`: pages through the log with `events read` (in the server over its
 * socket, or on the store this process opened), writing one line per event as it goes: memory
 * stays flat whatever the size of the log. A file is written as FILE.partial and renamed when
 * complete, so FILE is never a truncated export; without --out the lines go to stdout.
 */
export async function exportEventsThrough(run: Run, path: string | undefined, progress: Progress, now = new Date()): Promise<Outcome> {
  const started = Date.now()
  const partial = path ? `${path}.partial` : undefined
  const out: Writable = partial ? createWriteStream(partial, { encoding: 'utf8' }) : process.stdout
  const failed = new Promise<never>((_, reject) => out.once('error', reject))
  failed.catch(() => {})
  let events = 0
  try {
    await Promise.race([write(out, `${headerLine(now)}\n`), failed])
    for (let after = 0; ; ) {
      const outcome = await run('events read', { after, limit: EXPORT_PAGE }, () => {})
      if (!outcome.ok) return outcome
      const page = outcome.result as { events: RecordedEvent[]; head: number }
      if (page.events.length === 0) break
      await Promise.race([write(out, page.events.map((e) => `${eventLine(e)}\n`).join('')), failed])
      events += page.events.length
      after = page.events.at(-1)!.position
      progress({ label: `export ${events} events`, done: after, total: Math.max(after, page.head) })
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
    }
    return errorLine(error instanceof AppError ? error : new AppError('invalid_request', `cannot write ${path ?? 'stdout'}: ${(error as Error).message}`))
  }
  const seconds = (Date.now() - started) / 1000
  return { ok: true, result: { out: path ?? '-', events, seconds, events_per_second: rate(events, seconds) } }
}

/** The last non-blank line of a file (the trailer is short: the last few KiB hold it). */
async function lastLine(path: string, size: number): Promise<string> {
  const file = await open(path, 'r')
  try {
    const length = Math.min(size, 4096)
    const { buffer } = await file.read(Buffer.alloc(length), 0, length, size - length)
    return buffer.toString('utf8').trimEnd().split('\n').at(-1) ?? ''
  } finally {
    await file.close()
  }
}

/**
 * `events import FILE`: reads the file line by line and hands the events in batches to
 * `events import lines`, which compares them with what the store holds and records the rest (see
 * `importBatch`). Re-running an import is a no-op; a store holding other events is refused; a
 * file without its last line is imported as far as it goes and reported as truncated.
 */
export async function importEventsThrough(run: Run, path: string, progress: Progress): Promise<Outcome> {
  let size: number
  try {
    size = (await stat(path)).size
  } catch {
    return errorLine(invalidRequest(`cannot read ${path}`))
  }
  try {
    if (parseLine(await lastLine(path, size), 0).kind !== 'end') throw new Error()
  } catch {
    return errorLine(invalidRequest(`${path} does not end with the line that closes an events export: truncated, or not an export; nothing imported`))
  }
  const started = Date.now()
  const input = createReadStream(path, { encoding: 'utf8' })
  const lines = createInterface({ input, crlfDelay: Infinity })
  const total = { events: 0, imported: 0, present: 0 }
  let after = 0
  let lineNo = 0
  let bytes = 0
  let batch: string[] = []
  let firstLine = 0
  let ended: number | null = null
  const flush = async (): Promise<Outcome | undefined> => {
    if (batch.length === 0) return undefined
    const outcome = await run('events import lines', { lines: batch, first_line: firstLine, after }, () => {})
    if (!outcome.ok) return outcome
    const step = outcome.result as ImportStep
    after = step.after
    total.imported += step.imported
    total.present += step.present
    batch = []
    progress({ label: `import ${total.events} events`, done: bytes, total: size })
    return undefined
  }
  try {
    for await (const text of lines) {
      lineNo += 1
      bytes += Buffer.byteLength(text) + 1
      if (text.trim() === '') return errorLine(invalidRequest(`line ${lineNo}: a blank line`))
      if (ended !== null) return errorLine(invalidRequest(`line ${lineNo}: nothing may follow the last line`))
      const line = parseLine(text, lineNo)
      if (lineNo === 1 && line.kind !== 'header') return errorLine(invalidRequest(`${path} is not an events export: its first line is no header`))
      if (line.kind === 'header') {
        if (lineNo !== 1) return errorLine(invalidRequest(`line ${lineNo}: a header in the middle of the file`))
        continue
      }
      if (line.kind === 'end') {
        ended = line.events
        continue
      }
      if (batch.length === 0) firstLine = lineNo
      batch.push(text)
      total.events += 1
      if (batch.length >= IMPORT_BATCH) {
        const failed = await flush()
        if (failed) return failed
      }
    }
    const failed = await flush()
    if (failed) return failed
  } catch (error) {
    return errorLine(error)
  } finally {
    lines.close()
    input.destroy()
  }
  if (ended === null || ended !== total.events) {
    return errorLine(invalidRequest(`${path} says it holds ${ended} events but has ${total.events}`))
  }
  // Nothing may follow: a store holding more than the file holds other events.
  const beyond = await run('events read', { after, limit: 1 }, () => {})
  if (!beyond.ok) return beyond
  if ((beyond.result as { events: RecordedEvent[] }).events.length > 0) {
    return errorLine(new AppError('conflict', `the store holds events after the last one of ${path}: it is not a copy of this file`))
  }
  progress({ label: `import ${total.events} events`, done: size, total: size })
  const seconds = (Date.now() - started) / 1000
  return {
    ok: true,
    result: { file: path, events: total.events, imported: total.imported, already_present: total.present, seconds, events_per_second: rate(total.events, seconds) },
  }
}
