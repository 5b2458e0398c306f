import { createReadStream } from 'node:fs'
import { createInterface } from 'node:readline'
import type { Progress } from '../../runtime/progress.ts'
import type { Rejection } from '../../listings/ingest.ts'
import { clientCommand, inputFile } from '../command.ts'
import { sizeOfFileToRead } from '../file-to-read.ts'
import { type Outcome, type Send, errorLine } from '../outcome.ts'
import { type IngestedBatch, ingestLines } from './ingest-lines.ts'
import { oversizedLine } from '../../domain/listings/feed.ts'

type Ingested = { file: string; read: number; new: number; changed: number; unchanged: number; rejected: number; seconds: number }

/** Lines per `ingest lines` command: big enough to amortise a round trip, small enough to show progress. */
const BATCH_LINES = 500
/** Characters per `ingest lines` command at most (plus one line), so that the server's socket takes it (src/operator/socket-handler.ts). */
const BATCH_CHARS = 4 * 1024 * 1024

/**
 * Reads the file line by line (constant memory) and hands the raw lines in batches to `ingest
 * lines`, which validates and records them: the same code whether the command runs in the server
 * (over the socket) or in this process. Bad lines are reported as they come; the result is the
 * summary of the whole file.
 */
export async function ingestFileThrough(send: Send, path: string, progress: Progress, onRejected: (r: Rejection) => void): Promise<Outcome> {
  let size: number
  try {
    size = await sizeOfFileToRead(path)
  } catch (error) {
    return errorLine(error)
  }
  const started = Date.now()
  const total = { read: 0, new: 0, changed: 0, unchanged: 0, rejected: 0 }
  const input = createReadStream(path, { encoding: 'utf8' })
  const lines = createInterface({ input, crlfDelay: Infinity })
  // Consecutive lines of the file, the first of them line `firstLine`: the server numbers the rest.
  let batch: string[] = []
  let batchChars = 0
  let firstLine = 1
  let lineNo = 0
  let bytes = 0
  const flush = async (): Promise<Outcome | undefined> => {
    if (batch.length === 0) return undefined
    const outcome = await send(ingestLines.name, { lines: batch, first_line: firstLine }, () => {})
    if (!outcome.ok) return outcome
    const result = outcome.result as IngestedBatch
    for (const key of ['read', 'new', 'changed', 'unchanged', 'rejected'] as const) total[key] += result[key]
    for (const rejection of result.rejections) onRejected(rejection)
    batch = []
    batchChars = 0
    progress({ label: `ingest ${total.read} lines`, done: bytes, total: size })
    return undefined
  }
  try {
    for await (const line of lines) {
      lineNo += 1
      bytes += Buffer.byteLength(line) + 1
      // A line over the limit is refused here, by its number, and never sent: the lines before it
      // go first, so that each batch stays consecutive and rejections come in the file's order.
      const oversized = oversizedLine(line, lineNo)
      if (oversized && !oversized.ok) {
        const failed = await flush()
        if (failed) return failed
        total.read += 1
        total.rejected += 1
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
    const failed = await flush()
    if (failed) return failed
  } finally {
    lines.close()
    input.destroy()
  }
  progress({ label: `ingest ${total.read} lines`, done: size, total: size })
  const result: Ingested = { file: path, ...total, seconds: (Date.now() - started) / 1000 }
  return { ok: true, result }
}

export const ingest = clientCommand({
  name: 'ingest',
  summary: 'ingest a listings feed (one JSON object a line; docs/feed-format.md)',
  params: {
    file: inputFile('FILE.ndjson', 'the feed'),
  },
  notes: 'Bad lines are reported by number and skipped; the exit code is then 1. Re-running a file records nothing new.',
  flow: (send, a, terminal) => ingestFileThrough(send, a.file, terminal.progress, (rejection) => terminal.warn(rejection.reason)),
  output: (r: Ingested) => `${r.file}: read ${r.read}, new ${r.new}, changed ${r.changed}, unchanged ${r.unchanged}, rejected ${r.rejected} (${r.seconds} s)`,
  partlyRefused: (r) => r.rejected > 0,
})
