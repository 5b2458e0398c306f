import { writeSync } from 'node:fs'
import { isoTimes } from '../shared/iso-time.ts'

/** Where operator messages and the access log go: one structured line per event. */
export type Logger = { info(event: string, fields: Record<string, unknown>): void; error(event: string, fields: Record<string, unknown>): void }

/** Where log text goes: stdout and stderr for the server. Each call gets whole lines. */
export type LogOutput = { out(text: string): void; err(text: string): void }

/** A logger whose info lines wait in memory until `flush` (errors are written at once, after them). */
export type BufferedLogger = Logger & { flush(): void }

/** Above this many buffered characters a line is written at once, so memory stays bounded under any load. */
const MAX_BUFFERED = 64 * 1024

/** `{"t":…,"event":…,…fields}` as one line: the fields as given, after the time and the event. */
function jsonLine(iso: string, head: string, fields: Record<string, unknown>): string {
  const rest = JSON.stringify(fields)
  return `{"t":"${iso}",${head}${rest.length > 2 ? `,${rest.slice(1)}` : '}'}\n`
}

/**
 * JSON-lines logger, one JSON object per line (`t`, `event`, then the fields), that writes info
 * lines (the access log: one per request) in batches: a write per batch instead of a system call
 * per request. The caller flushes on an interval and before exit; a batch is also written when it
 * grows past 64 KiB, and before every error line. `now` gives epoch milliseconds. Never receives an
 * Authorization header or a key.
 */
export function bufferedJsonLogger(output: LogOutput, now: () => number): BufferedLogger {
  const iso = isoTimes()
  let buffered = ''
  const flush = () => {
    if (buffered === '') return
    const text = buffered
    buffered = ''
    output.out(text)
  }
  return {
    info(event, fields) {
      buffered += jsonLine(iso(now()), `"event":${JSON.stringify(event)}`, fields)
      if (buffered.length > MAX_BUFFERED) flush()
    },
    error(event, fields) {
      flush()
      output.err(jsonLine(iso(now()), `"level":"error","event":${JSON.stringify(event)}`, fields))
    },
    flush,
  }
}

const waitAMoment = new Int32Array(new SharedArrayBuffer(4))

/** Writes all of `text` to a file descriptor, synchronously (also when it is a full non-blocking pipe). */
export function writeAllSync(fd: number, text: string): void {
  const bytes = Buffer.from(text)
  let written = 0
  while (written < bytes.length) {
    try {
      written += writeSync(fd, bytes, written)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') throw error
      Atomics.wait(waitAMoment, 0, 0, 1)
    }
  }
}

/** The server's log output: stdout and stderr. */
export const processOutput: LogOutput = { out: (text) => writeAllSync(1, text), err: (text) => writeAllSync(2, text) }
