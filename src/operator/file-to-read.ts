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
