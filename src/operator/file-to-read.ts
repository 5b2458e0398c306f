import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import { invalidRequest } from '../shared/errors.ts'

/** Why a file cannot be read, in words, with the path the command resolved. */
function unreadable(path: string, error: unknown): string {
  switch ((error as NodeJS.ErrnoException).code) {
    case 'ENOENT':
      return `no such file: ${path}`
    case 'ENOTDIR':
      return `no such file: ${path} (a part of the path is not a directory)`
    case 'EACCES':
      return `permission denied: ${path}`
    default:
      return `cannot read ${path}: ${error instanceof Error ? error.message : String(error)}`
  }
}

/** The size of a file a command is about to read; else invalid_request saying what is wrong (`no such file: /srv/feed.ndjson`). */
export async function sizeOfFileToRead(path: string): Promise<number> {
  let info: Awaited<ReturnType<typeof stat>>
  try {
    info = await stat(path)
  } catch (error) {
    throw invalidRequest(unreadable(path, error))
  }
  // A pipe is fine (`ingest /dev/stdin < feed.ndjson`); a directory is a mistake.
  if (info.isDirectory()) throw invalidRequest(`${path} is a directory: give the path of a file`)
  return info.size
}

/**
 * How many lines a command's progress will count in the file (as `readline` reads them: a last line
 * without its newline counts); undefined for what is not a regular file (a pipe is read once).
 */
export async function linesOfFileToRead(path: string): Promise<number | undefined> {
  if (!(await stat(path)).isFile()) return undefined
  let lines = 0
  let last = 0x0a
  for await (const chunk of createReadStream(path) as AsyncIterable<Buffer>) {
    for (let at = chunk.indexOf(0x0a); at >= 0; at = chunk.indexOf(0x0a, at + 1)) lines += 1
    if (chunk.length > 0) last = chunk[chunk.length - 1]!
  }
  return last === 0x0a ? lines : lines + 1
}
