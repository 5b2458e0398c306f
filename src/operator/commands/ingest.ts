import { createReadStream } from 'node:fs'
import { basename } from 'node:path'
import { createInterface } from 'node:readline'
import type { Rejection } from '../../listings/ingest.ts'
import { clientCommand, inputFile, type Terminal } from '../command.ts'
import { linesOfFileToRead, sizeOfFileToRead } from '../file-to-read.ts'
import { type Outcome, type Send, errorLine } from '../outcome.ts'
import { type IngestedBatch, ingestLines } from './ingest-lines.ts'
import { oversizedLine } from '../../domain/listings/feed.ts'

/** The summary; `interrupted`: Ctrl-C stopped the reading after line `through` (what it counts was recorded, nothing after it). */
type Ingested = {
  file: string
  read: number
  new: number
  changed: number
  unchanged: number
  rejected: number
  seconds: number
  interrupted?: { through: number }
}

/** Lines per `ingest lines` command: big enough to amortise a round trip, small enough to show progress. */
const BATCH_LINES = 500
/** Characters per `ingest lines` command at most (plus one line), so that the server's socket takes it (src/operator/socket-handler.ts). */
const BATCH_CHARS = 4 * 1024 * 1024

/**
 * Reads the file line by line (constant memory) and hands the raw lines in batches to `ingest
 * lines`, which validates and records them: the same code whether the command runs in the server
 * (over the socket) or in this process. Bad lines are reported as they come; the result is the
 * summary of the whole file, or, once `interrupted` aborts (Ctrl-C), of the lines sent until then:
 * the batch on its way is waited for, the lines after it are not read.
 */
export async function ingestFileThrough(send: Send, path: string, terminal: Pick<Terminal, 'progress' | 'interrupted'>, onRejected: (r: Rejection) => void): Promise<Outcome> {
  let lineCount: number | undefined
  try {
    await sizeOfFileToRead(path)
    lineCount = await linesOfFileToRead(path)
  } catch (error) {
    return errorLine(error)
  }
  const started = Date.now()
  const total = { read: 0, new: 0, changed: 0, unchanged: 0, rejected: 0 }
  const input = createReadStream(path, { encoding: 'utf8' })
  const lines = createInterface({ input, crlfDelay: Infinity })
  const shown = () => terminal.progress({ label: `ingest ${basename(path)}`, done: through, total: lineCount, unit: 'lines' })
  // Consecutive lines of the file, the first of them line `firstLine`: the server numbers the rest.
  let batch: string[] = []
  let batchChars = 0
  let firstLine = 1
  let lineNo = 0
  /** The last line whose outcome is counted in `total`. */
  let through = 0
  const flush = async (): Promise<Outcome | undefined> => {
    if (batch.length === 0) return undefined
    const outcome = await send(ingestLines.name, { lines: batch, first_line: firstLine }, () => {})
    if (!outcome.ok) return outcome
    const result = outcome.result as IngestedBatch
    for (const key of ['read', 'new', 'changed', 'unchanged', 'rejected'] as const) total[key] += result[key]
    for (const rejection of result.rejections) onRejected(rejection)
    through = firstLine + batch.length - 1
    batch = []
    batchChars = 0
    // After Ctrl-C the bar's line is ended: the summary follows.
    if (!terminal.interrupted.aborted) shown()
    return undefined
  }
  try {
    for await (const line of lines) {
      if (terminal.interrupted.aborted) break
      lineNo += 1
      // A line over the limit is refused here, by its number, and never sent: the lines before it
      // go first, so that each batch stays consecutive and rejections come in the file's order.
      const oversized = oversizedLine(line, lineNo)
      if (oversized && !oversized.ok) {
        const failed = await flush()
        if (failed) return failed
        total.read += 1
        total.rejected += 1
        through = lineNo
        onRejected({ line: oversized.line, reason: oversized.reason, details: oversized.details })
        continue
      }
      if (batch.length === 0) firstLine = lineNo
      batch.push(line)
      batchChars += line.length
      if (batch.length >= BATCH_LINES || batchChars >= BATCH_CHARS) {
        const failed = await flush()
        if (failed) return failed
      }
    }
    const failed = terminal.interrupted.aborted ? undefined : await flush()
    if (failed) return failed
  } finally {
    lines.close()
    input.destroy()
  }
  if (!terminal.interrupted.aborted) shown()
  const interrupted = terminal.interrupted.aborted ? { interrupted: { through } } : {}
  const result: Ingested = { file: path, ...total, seconds: (Date.now() - started) / 1000, ...interrupted }
  return { ok: true, result }
}

export const ingest = clientCommand({
  name: 'ingest',
  summary: 'ingest a listings feed (one JSON object a line; docs/feed-format.md)',
  params: {
    file: inputFile('FILE.ndjson', 'the feed'),
  },
  notes: 'Bad lines are reported by number and skipped; the exit code is then 1. Re-running a file records nothing new.',
  flow: (send, a, terminal) => ingestFileThrough(send, a.file, terminal, (rejection) => terminal.warn(rejection.reason)),
  output: (r: Ingested) =>
    `${r.file}: ${r.interrupted ? `interrupted (Ctrl-C) after line ${r.interrupted.through}: ` : ''}read ${r.read}, new ${r.new}, changed ${r.changed}, unchanged ${r.unchanged}, rejected ${r.rejected} (${r.seconds} s)` +
    (r.interrupted ? `\nthe lines after line ${r.interrupted.through} were not read: run the same command again to ingest them (the lines already recorded record nothing new)` : ''),
  partlyRefused: (r) => r.rejected > 0,
  interrupted: (r) => r.interrupted !== undefined,
})
