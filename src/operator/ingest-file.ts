import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import { createInterface } from 'node:readline'
import type { Rejection } from '../listings/ingest.ts'
import { AppError } from '../shared/errors.ts'
import type { Progress } from './commands.ts'
import { type OperatorLine, errorLine } from './socket-handler.ts'

type Outcome = Extract<OperatorLine, { ok: boolean }>
type Run = (name: string, args: unknown, progress: Progress) => Promise<Outcome>
type BatchResult = { read: number; new: number; changed: number; unchanged: number; rejected: number; rejections: Rejection[] }

/** Lines per `ingest lines` command: big enough to amortise a round trip, small enough to show progress. */
const BATCH_LINES = 500

/**
 * `ingest FILE.ndjson`: reads the file line by line (constant memory) and hands the raw lines in
 * batches to the `ingest lines` command, which validates and records them: the same code whether
 * the command runs in the server (over the socket) or in this process. Bad lines are reported as
 * they come; the result is the summary of the whole file.
 */
export async function ingestFileThrough(run: Run, path: string, progress: Progress, onRejected: (r: Rejection) => void): Promise<Outcome> {
  let size: number
  try {
    size = (await stat(path)).size
  } catch {
    return errorLine(new AppError('invalid_request', `cannot read ${path}`))
  }
  const started = Date.now()
  const total = { read: 0, new: 0, changed: 0, unchanged: 0, rejected: 0 }
  const input = createReadStream(path, { encoding: 'utf8' })
  const lines = createInterface({ input, crlfDelay: Infinity })
  let batch: string[] = []
  let firstLine = 1
  let lineNo = 0
  let bytes = 0
  const flush = async (): Promise<Outcome | undefined> => {
    if (batch.length === 0) return undefined
    const outcome = await run('ingest lines', { lines: batch, first_line: firstLine }, () => {})
    if (!outcome.ok) return outcome
    const result = outcome.result as BatchResult
    for (const key of ['read', 'new', 'changed', 'unchanged', 'rejected'] as const) total[key] += result[key]
    for (const rejection of result.rejections) onRejected(rejection)
    firstLine = lineNo + 1
    batch = []
    progress({ label: `ingest ${total.read} lines`, done: bytes, total: size })
    return undefined
  }
  try {
    for await (const line of lines) {
      lineNo += 1
      bytes += Buffer.byteLength(line) + 1
      batch.push(line)
      if (batch.length >= BATCH_LINES) {
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
  return { ok: true, result: { file: path, ...total, seconds: (Date.now() - started) / 1000 } }
}
