import type { Progress, ProgressUpdate } from '../runtime/progress.ts'
import { isAppError } from '../shared/errors.ts'

/** One line of the NDJSON answer to an operator request: progress updates, then exactly one result. */
export type OperatorLine =
  | { progress: ProgressUpdate }
  | { ok: true; result: unknown }
  | { ok: false; error: string; message: string; details?: unknown }

/** How a command ended: its result, or the error it was refused with. */
export type Outcome = Extract<OperatorLine, { ok: boolean }>

/** Sends a command where the store is: to the server behind its socket, or to this process's store. */
export type Send = (name: string, args: unknown, progress: Progress) => Promise<Outcome>

export const errorLine = (error: unknown): Extract<OperatorLine, { ok: false }> =>
  isAppError(error)
    ? { ok: false, error: error.code, message: error.message, ...(error.extra.details ? { details: error.extra.details } : {}) }
    : { ok: false, error: 'internal', message: error instanceof Error ? error.message : String(error) }
