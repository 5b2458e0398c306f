import { chmodSync, mkdirSync, statSync } from 'node:fs'

/** Permission bits other than the owner's: none of them may be set on the data directory. */
const GROUP_AND_OTHERS = 0o077

/**
 * Makes the data directory private to the service user: created 0700 when missing (and every file
 * the process creates 0600, through the umask). An existing directory is left as the operator set
 * it, but a looser one is reported, because the store's files (every event, key hashes included)
 * would be readable by other users. Returns the loose mode, or null.
 */
export function preparePrivateDataDir(dataDir: string): { looseMode: string | null } {
  process.umask(GROUP_AND_OTHERS)
  let existed = true
  try {
    statSync(dataDir)
  } catch {
    existed = false
  }
  mkdirSync(dataDir, { recursive: true, mode: 0o700 })
  if (!existed) chmodSync(dataDir, 0o700)
  const mode = statSync(dataDir).mode & 0o777
  return { looseMode: mode & GROUP_AND_OTHERS ? mode.toString(8).padStart(4, '0') : null }
}
