import { createReadStream } from 'node:fs'
import { open } from 'node:fs/promises'
import { createInterface } from 'node:readline'
import { Type } from '@sinclair/typebox'
import type { RecordedEvent } from '../../eventstore/port.ts'
import { type ImportStep, parseLine } from '../../eventstore/transfer.ts'
import type { Progress } from '../../runtime/progress.ts'
import { fail, invalidRequest } from '../../shared/errors.ts'
import { clientCommand, param } from '../command.ts'
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

/**
 * Reads the file line by line and hands the events in batches to `events import lines`, which
 * compares them with what the store holds and records the rest (see `importBatch`). Re-running an
 * import is a no-op; a store holding other events is refused; a file without its last line is
 * refused before anything is imported.
 */
export async function importEventsThrough(send: Send, path: string, progress: Progress): Promise<Outcome> {
  let size: number
  try {
    size = await sizeOfFileToRead(path)
  } catch (error) {
    return errorLine(error)
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
    const outcome = await send(eventsImportLines.name, { lines: batch, first_line: firstLine, after }, () => {})
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
  const beyond = await send(eventsRead.name, { after, limit: 1 }, () => {})
  if (!beyond.ok) return beyond
  if ((beyond.result as { events: RecordedEvent[] }).events.length > 0) {
    return errorLine(fail.conflict(`the store holds events after the last one of ${path}: it is not a copy of this file`))
  }
  progress({ label: `import ${total.events} events`, done: size, total: size })
  const seconds = (Date.now() - started) / 1000
  const result: Imported = {
    file: path,
    events: total.events,
    imported: total.imported,
    already_present: total.present,
    seconds,
    events_per_second: eventsPerSecond(total.events, seconds),
  }
  return { ok: true, result }
}

export const eventsImport = clientCommand({
  name: 'events import',
  summary: 'record the events of an export into this store (empty, or holding the beginning of the same log)',
  params: {
    file: param(Type.String(), { placeholder: 'FILE', help: 'an events export, relative to where you run the command', positional: true, path: true }),
  },
  notes: 'Re-running an import records nothing new. A store holding other events is refused.',
  flow: (send, a, terminal) => importEventsThrough(send, a.file, terminal.progress),
  output: (r: Imported) => `${r.file}: ${r.events} events, ${r.imported} imported, ${r.already_present} already present (${r.seconds} s, ${r.events_per_second} events/s)`,
})
