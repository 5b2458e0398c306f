import type { Db } from '../../src/db/port.ts'
import { toNumber } from '../../src/db/port.ts'
import type { Follower, LiveAdvancing } from '../engine/follow.ts'
import { followRows, type Rows } from '../engine/follow-rows.ts'
import type { LiveTables } from '../engine/live-tables.ts'
import { briefingUsageProjection } from './usage.ts'

type UsageRow = { owner_id: string; month: string; used: unknown; position: unknown }

const keyOf = (ownerId: string, month: string) => `${ownerId}\n${month}`

/**
 * In-memory copy of the `briefing_usage` read model (itself counted from the quota streams, see
 * `usedAt` in src/domain/briefings/quota.ts), so that /health reports the quota without a
 * database round trip. It follows the live generation like the key index (engine/follow-rows.ts):
 * the rows a batch changed are read again when any process applies it, so a charge shows once
 * the read model has it and this copy has read it again (milliseconds on one server; across
 * servers, the projection's lag as well). A promoted or rolled back generation is loaded whole.
 */
export class UsageIndex {
  private constructor(private readonly rows: Follower<Rows<number>>) {}

  static follow(db: Db, sources: { live: LiveTables; advancing: LiveAdvancing }, onError: (error: unknown) => void): UsageIndex {
    return new UsageIndex(
      followRows<UsageRow, number>(
        db,
        sources,
        {
          projection: briefingUsageProjection,
          table: 'usage',
          columns: 'owner_id, month, used',
          id: (row) => keyOf(row.owner_id, row.month),
          value: (row) => toNumber(row.used),
        },
        onError,
      ),
    )
  }

  /** Briefings charged to `ownerId` in the quota month `month`, as far as the copy has caught up. */
  used(ownerId: string, month: string): number {
    return this.rows.latest()?.byId.get(keyOf(ownerId, month)) ?? 0
  }

  /** Settles when the copy holds everything it was told of (and the first load is done). */
  settled(): Promise<void> {
    return this.rows.settled()
  }

  stop(): void {
    this.rows.stop()
  }
}
