import { write, writeSync } from 'node:fs'
import { isoTimes } from '../shared/iso-time.ts'

/** Where operator messages and the access log go: one structured line per event. */
export type Logger = { info(event: string, fields: Record<string, unknown>): void; error(event: string, fields: Record<string, unknown>): void }

/**
 * Where log text goes: stdout and stderr for the server. Each call gets whole lines. `outLater`
 * writes to the same place as `out` without blocking the event loop (settles once all is written).
 */
export type LogOutput = { out(text: string): void; err(text: string): void; outLater?(text: string): Promise<void> }

/**
 * A logger whose info lines wait in memory: `flush` sends them on (in the background when the output
 * can write later), `flushNow` writes what waits at once (at exit: not what a background write holds),
 * `drain` settles once every line logged so far is written. Errors are written at once.
 */
export type BufferedLogger = Logger & { flush(): void; flushNow(): void; drain(): Promise<void> }

/** Above this many buffered characters a batch is sent on at once, so that batches stay small. */
const MAX_BUFFERED = 64 * 1024

/** `{"t":…,"event":…,…fields}` as one line: the fields as given, after the time and the event. */
function jsonLine(iso: string, head: string, fields: Record<string, unknown>): string {
  const rest = JSON.stringify(fields)
  return `{"t":"${iso}",${head}${rest.length > 2 ? `,${rest.slice(1)}` : '}'}\n`
}

/**
 * JSON-lines logger, one JSON object per line (`t`, `event`, then the fields), that writes info
 * lines (the access log: one per request) in batches: a write per batch instead of a system call
 * per request, and, when the output can write later, off the event loop, one batch at a time, in
 * order. The caller flushes on an interval, drains before a normal exit and writes the rest at
 * once on any other way out; a batch is also sent when it grows past 64 KiB, and before every
 * error line when no batch is being written. `now` gives epoch milliseconds. Never receives an
 * Authorization header or a key.
 */
export function bufferedJsonLogger(output: LogOutput, now: () => number): BufferedLogger {
  const iso = isoTimes()
  let buffered = ''
  /** The batch being written in the background, if any: the next waits for it, so lines stay in order. */
  let writing: Promise<void> | null = null
  const take = () => {
    const text = buffered
    buffered = ''
    return text
  }
  const flushNow = () => {
    if (buffered !== '') output.out(take())
  }
  const flush = () => {
    if (buffered === '' || writing) return
    if (!output.outLater) return flushNow()
    const text = take()
    writing = output.outLater(text).then(
      () => {
        writing = null
        if (buffered.length > MAX_BUFFERED) flush()
      },
      () => {
        // The background write failed (nothing is known of how much it wrote): the text goes out
        // at once instead, which throws as the synchronous log would if the output is gone.
        writing = null
        output.out(text)
      },
    )
  }
  return {
    info(event, fields) {
      buffered += jsonLine(iso(now()), `"event":${JSON.stringify(event)}`, fields)
      if (buffered.length > MAX_BUFFERED) flush()
    },
    error(event, fields) {
      if (!writing) flushNow()
      output.err(jsonLine(iso(now()), `"level":"error","event":${JSON.stringify(event)}`, fields))
    },
    flush,
    flushNow,
    async drain() {
      while (writing || buffered !== '') {
        flush()
        await writing
      }
    },
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

/** Writes all of `text` to a file descriptor in the background (a full non-blocking pipe is waited for). */
export function writeAllLater(fd: number, text: string): Promise<void> {
  const bytes = Buffer.from(text)
  return new Promise((resolve, reject) => {
    const from = (offset: number) =>
      write(fd, bytes, offset, bytes.length - offset, null, (error, written) => {
        if (error) return error.code === 'EAGAIN' ? void setTimeout(() => from(offset), 1) : reject(error)
        if (offset + written < bytes.length) from(offset + written)
        else resolve()
      })
    from(0)
  })
}

/** The server's log output: stdout (the access log written in the background) and stderr. */
export const processOutput: LogOutput = { out: (text) => writeAllSync(1, text), err: (text) => writeAllSync(2, text), outLater: (text) => writeAllLater(1, text) }
