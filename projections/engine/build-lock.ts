import { hostname } from 'node:os'
import type { Db } from '../../src/db/port.ts'
import { toIso, toNumber } from '../../src/db/port.ts'
import { fail } from '../../src/shared/errors.ts'

/** Who is running: shown to a second builder, and used to recognise a lock left by a dead process on this host. */
export type ProcessIdentity = { pid: number; host: string; alive(pid: number): boolean }

/** This process: pid and host, and whether a pid on this host is still running. */
export const thisProcess = (): ProcessIdentity => ({
  pid: process.pid,
  host: hostname(),
  alive(pid) {
    try {
      process.kill(pid, 0)
      return true
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === 'EPERM'
    }
  },
})

export type BuildLockHolder = { generation: string; pid: number; host: string; startedAt: string; heartbeatAt: string }

/** A lease not renewed for this long belongs to a process that is gone (or cut off): it can be taken over. */
export const LEASE_MS = 15_000
const HEARTBEAT_MS = 2_000

export type BuildLock = {
  /** False once another process took the lease over (this one stalled past LEASE_MS): the build must stop. */
  held(): boolean
  /** Renews the lease now (also done every 2 s by a timer). */
  renew(): Promise<void>
  /** Names the generation being built, for whoever is refused the lock meanwhile. */
  describe(generation: string): Promise<void>
  release(): Promise<void>
}

const describe = (projection: string, h: BuildLockHolder) =>
  `${projection} is already being built (${h.generation}) by process ${h.pid} on ${h.host}, started at ${h.startedAt}; ` +
  'wait for it to finish (projections status shows its progress) or stop that process'

/**
 * One build of a projection at a time, across processes: a lease row in `mirador_build_locks`,
 * renewed every 2 s while the build runs. Taking it over is allowed when the holder's lease has
 * run out (15 s without renewal) or the holder is a dead process on this host (a build killed a
 * moment ago does not block the next one). Times come from the database's clock, so hosts whose
 * clocks disagree still agree on who holds it. Within one process, builds also exclude each other.
 */
export class BuildLocks {
  private readonly local = new Map<string, BuildLockHolder>()

  constructor(
    private readonly db: Db,
    private readonly me: ProcessIdentity,
  ) {}

  /** Takes the lock of `projection`, or throws `conflict` naming the holder. */
  async acquire(projection: string): Promise<BuildLock> {
    const generation = 'starting'
    const mine = this.local.get(projection)
    if (mine) throw fail.conflict(describe(projection, mine))
    const token = crypto.randomUUID()
    const holder = await this.db.transaction(async (tx) => {
      const [current] = await tx.query<Record<string, unknown>>(
        `select generation, pid, host, started_at, heartbeat_at, heartbeat_at > clock_timestamp() - $2 * interval '1 millisecond' as fresh
           from mirador_build_locks where projection = $1 for update`,
        [projection, LEASE_MS],
      )
      if (current) {
        const pid = toNumber(current.pid)
        const deadHere = current.host === this.me.host && pid !== this.me.pid && !this.me.alive(pid)
        if (current.fresh && !deadHere) return holderOf(current)
      }
      await tx.query(
        `insert into mirador_build_locks (projection, token, generation, pid, host, started_at, heartbeat_at)
         values ($1, $2, $3, $4, $5, clock_timestamp(), clock_timestamp())
         on conflict (projection) do update set token = excluded.token, generation = excluded.generation, pid = excluded.pid,
           host = excluded.host, started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at`,
        [projection, token, generation, this.me.pid, this.me.host],
      )
      return null
    })
    if (holder) throw fail.conflict(describe(projection, holder))

    const startedAt = new Date().toISOString()
    this.local.set(projection, { generation, pid: this.me.pid, host: this.me.host, startedAt, heartbeatAt: startedAt })
    let held = true
    const renew = async () => {
      if (!held) return
      const rows = await this.db.query(
        `update mirador_build_locks set heartbeat_at = clock_timestamp() where projection = $1 and token = $2 returning projection`,
        [projection, token],
      )
      if (rows.length === 0) held = false
    }
    const timer = setInterval(() => void renew().catch(() => {}), HEARTBEAT_MS)
    timer.unref?.()
    return {
      held: () => held,
      renew,
      describe: async (name) => {
        const local = this.local.get(projection)
        if (local) local.generation = name
        await this.db.query('update mirador_build_locks set generation = $3 where projection = $1 and token = $2', [projection, token, name])
      },
      release: async () => {
        clearInterval(timer)
        held = false
        this.local.delete(projection)
        await this.db.query('delete from mirador_build_locks where projection = $1 and token = $2', [projection, token])
      },
    }
  }

  /** Who builds `projection` right now (a live lease), if anyone. */
  async holder(projection: string): Promise<BuildLockHolder | null> {
    const local = this.local.get(projection)
    if (local) return local
    const [row] = await this.db.query<Record<string, unknown>>(
      `select generation, pid, host, started_at, heartbeat_at from mirador_build_locks
        where projection = $1 and heartbeat_at > clock_timestamp() - $2 * interval '1 millisecond'`,
      [projection, LEASE_MS],
    )
    if (!row) return null
    const holder = holderOf(row)
    return holder.host === this.me.host && holder.pid !== this.me.pid && !this.me.alive(holder.pid) ? null : holder
  }
}

const holderOf = (row: Record<string, unknown>): BuildLockHolder => ({
  generation: String(row.generation),
  pid: toNumber(row.pid),
  host: String(row.host),
  startedAt: toIso(row.started_at),
  heartbeatAt: toIso(row.heartbeat_at),
})
