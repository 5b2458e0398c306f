import type { Dependency } from '../runtime/dependency.ts'
import type { Db } from './port.ts'

/**
 * `db` with every call kept by `dependency` (src/runtime/dependency.ts): its outages become the
 * dependency's 503 and its state, and a request's calls are bounded. LISTEN is left as it is:
 * the adapter re-listens on its own after a reconnection.
 */
export function watchedDb(db: Db, dependency: Dependency): Db {
  return {
    kind: db.kind,
    query: (text, params) => dependency.call(() => db.query(text, params)),
    exec: (script) => dependency.call(() => db.exec(script)),
    transaction: (work) => dependency.call(() => db.transaction(work)),
    listen: (channel, onNotify) => db.listen(channel, onNotify),
    close: () => db.close(),
  }
}
