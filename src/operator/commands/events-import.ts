import { createReadStream } from 'node:fs'
import { open } from 'node:fs/promises'
import { createInterface } from 'node:readline'
import type { RecordedEvent } from '../../eventstore/port.ts'
import { type ImportStep, parseLine } from '../../eventstore/transfer.ts'
import type { Progress } from '../../runtime/progress.ts'
import { fail, invalidRequest } from '../../shared/errors.ts'
import { clientCommand, inputFile } from '../command.ts'
import { sizeOfFileToRead } from '../file-to-read.ts'
import { type Outcome, type Send, errorLine } from '../outcome.ts'
import { eventsPerSecond } from './events-export.ts'
import { eventsImportLines } from './events-import-lines.ts'
import { eventsRead } from './events-read.ts'

type Imported = { file: string; events: number; imported: number; already_present: number; seconds: number; events_per_second: number }

/** Lines per `events import lines` batch: one round trip each. */
const IMPORT_BATCH = 1000

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

/** The file's size and the number of events its closing line names, once it is known to end with that line; else the refusal. */
async function sizeOfWholeExport(path: string): Promise<{ size: number; events: number } | { refused: Outcome }> {
  let size: number
  try {
    size = await sizeOfFileToRead(path)
  } catch (error) {
    return { refused: errorLine(error) }
  }
  try {
    const last = parseLine(await lastLine(path, size), 0)
    if (last.kind !== 'end') throw new Error()
    return { size, events: last.events }
  } catch {
    return { refused: errorLine(invalidRequest(`${path} does not end with the line that closes an events export: truncated, or not an export; nothing imported`)) }
  }
}

/** What was sent so far: events read, imported, found present; `after`: the store's position after the last batch. */
type Totals = { events: number; imported: number; present: number; after: number }

/** Event lines sent to `events import lines` in batches of IMPORT_BATCH, one round trip each. */
function importBatches(send: Send) {
  const totals: Totals = { events: 0, imported: 0, present: 0, after: 0 }
  let batch: string[] = []
  let firstLine = 0
  /** Sends what is waiting (then `afterSent`); the refusal, if the store refused it. */
  async function flush(afterSent: () => void): Promise<Outcome | undefined> {
    if (batch.length === 0) return undefined
    const outcome = await send(eventsImportLines.name, { lines: batch, first_line: firstLine, after: totals.after }, () => {})
    if (!outcome.ok) return outcome
    const step = outcome.result as ImportStep
    totals.after = step.after
    totals.imported += step.imported
    totals.present += step.present
    batch = []
    afterSent()
    return undefined
  }
  /** Adds line `lineNo`; a full batch is sent (true once it was). */
  function add(text: string, lineNo: number): boolean {
    if (batch.length === 0) firstLine = lineNo
    batch.push(text)
    totals.events += 1
    return batch.length >= IMPORT_BATCH
  }
  return { totals, add, flush }
}

/**
 * Reads the export line by line (header first, then events, then the closing line, nothing blank)
 * and sends its events in batches; the number of events the closing line names, or the refusal.
 */
async function sendExport(path: string, expected: number, batches: ReturnType<typeof importBatches>, progress: Progress): Promise<{ ended: number | null } | { refused: Outcome }> {
  const input = createReadStream(path, { encoding: 'utf8' })
  const lines = createInterface({ input, crlfDelay: Infinity })
  const refused = (message: string) => ({ refused: errorLine(invalidRequest(message)) })
  let lineNo = 0
  let ended: number | null = null
  const flushed = () => batches.flush(() => progress({ label: 'import', done: batches.totals.events, total: expected, unit: 'events' }))
  try {
    for await (const text of lines) {
      lineNo += 1
      if (text.trim() === '') return refused(`line ${lineNo}: a blank line`)
      if (ended !== null) return refused(`line ${lineNo}: nothing may follow the last line`)
      const line = parseLine(text, lineNo)
      if (lineNo === 1 && line.kind !== 'header') return refused(`${path} is not an events export: its first line is no header`)
      if (line.kind === 'header') {
        if (lineNo !== 1) return refused(`line ${lineNo}: a header in the middle of the file`)
      } else if (line.kind === 'end') {
        ended = line.events
      } else if (batches.add(text, lineNo)) {
        const failed = await flushed()
        if (failed) return { refused: failed }
      }
    }
    const failed = await flushed()
    return failed ? { refused: failed } : { ended }
  } catch (error) {
    return { refused: errorLine(error) }
  } finally {
    lines.close()
    input.destroy()
  }
}

/**
 * Reads the file line by line and hands the events in batches to `events import lines`, which
 * compares them with what the store holds and records the rest (see `importBatch`). Re-running an
 * import is a no-op; a store holding other events is refused; a file without its last line is
 * refused before anything is imported.
 */
export async function importEventsThrough(send: Send, path: string, progress: Progress): Promise<Outcome> {
  const whole = await sizeOfWholeExport(path)
  if ('refused' in whole) return whole.refused
  const started = Date.now()
  const batches = importBatches(send)
  const sent = await sendExport(path, whole.events, batches, progress)
  if ('refused' in sent) return sent.refused
  const { events, imported, present, after } = batches.totals
  if (sent.ended === null || sent.ended !== events) {
    return errorLine(invalidRequest(`${path} says it holds ${sent.ended} events but has ${events}`))
  }
  // Nothing may follow: a store holding more than the file holds other events.
  const beyond = await send(eventsRead.name, { after, limit: 1 }, () => {})
  if (!beyond.ok) return beyond
  if ((beyond.result as { events: RecordedEvent[] }).events.length > 0) {
    return errorLine(fail.conflict(`the store holds events after the last one of ${path}: it is not a copy of this file`))
  }
  progress({ label: 'import', done: events, total: whole.events, unit: 'events' })
  const seconds = (Date.now() - started) / 1000
  const result: Imported = { file: path, events, imported, already_present: present, seconds, events_per_second: eventsPerSecond(events, seconds) }
  return { ok: true, result }
}

export const eventsImport = clientCommand({
  name: 'events import',
  summary: 'record the events of an export into this store (empty, or holding the beginning of the same log)',
  params: {
    file: inputFile('FILE', 'an events export'),
  },
  notes: 'Re-running an import records nothing new. A store holding other events is refused.',
  flow: (send, a, terminal) => importEventsThrough(send, a.file, terminal.progress),
  output: (r: Imported) => `${r.file}: ${r.events} events, ${r.imported} imported, ${r.already_present} already present (${r.seconds} s, ${r.events_per_second} events/s)`,
})
