import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs'
import { join } from 'node:path'

export class DataDirBusy extends Error {
  constructor(readonly pid: number) {
    super(`the data directory is in use by process ${pid}`)
  }
}

/** Only "no such process" frees the lock: a check that cannot be made (EPERM, Deno without --allow-run) counts as alive. */
const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH'
  }
}

/**
 * PGlite files can be opened by one process only. The server holds this lock while it runs;
 * the CLI takes it only when no server answers on the socket. A lock left by a dead process is taken over.
 */
export function lockDataDir(dataDir: string): () => void {
  mkdirSync(dataDir, { recursive: true })
  const path = join(dataDir, 'mirador.lock')
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, 'wx', 0o600)
      writeSync(fd, String(process.pid))
      closeSync(fd)
      return () => rmSync(path, { force: true })
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      const pid = Number(readFileSync(path, 'utf8').trim())
      if (Number.isInteger(pid) && pid > 0 && alive(pid)) throw new DataDirBusy(pid)
      rmSync(path, { force: true })
    }
  }
  throw new Error(`could not lock ${path}`)
}
