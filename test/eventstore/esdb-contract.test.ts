import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openEsdbEventStore } from '../../src/eventstore/esdb-event-store.ts'
import type { BatchGuarantee, EventStore, RecordedEvent } from '../../src/eventstore/port.ts'
import { startTcpProxy, type TcpProxy } from '../ratelimit/tcp-proxy.ts'
import { eventually } from '../support/eventually.ts'
import { type EventStoreUnderTest, eventStoreContract } from './contract.ts'

/**
 * The contract against a real EventStoreDB or KurrentDB (22.6 or later), whenever
 * ESDB_CONNECTION_STRING names one, e.g. `kurrentdb://127.0.0.1:2113?tls=false`: with the batches the
 * server allows (all or nothing from KurrentDB 25.1) and, on a server that allows both, once more
 * stream by stream. No KurrentDB runs in CI here, so it is skipped there.
 */
const CONNECTION = process.env.ESDB_CONNECTION_STRING

/** The adapter, stream by stream when asked even where the server could record batches all or nothing. */
const openForContract = (connection: string, singleStreamAppends = false): Promise<EventStore> =>
  openEsdbEventStore(connection, { singleStreamAppends })

/** What the server allows, read once before the specs are defined. */
async function serverBatches(connection: string): Promise<BatchGuarantee> {
  const store = await openEsdbEventStore(connection)
  console.info(`[info] ${connection}: KurrentDB ${store.server.version}; ${store.server.reason}`)
  await store.close()
  return store.batches
}

/** The connection string with its host and port replaced (to go through a proxy). */
function via(connection: string, port: number): string {
  const url = new URL(connection)
  url.host = `127.0.0.1:${port}`
  return url.toString()
}

async function esdbUnderTest(connection: string, singleStreamAppends = false): Promise<EventStoreUnderTest> {
  const open: EventStore[] = []
  const openOne = async () => {
    const store = await openForContract(connection, singleStreamAppends)
    open.push(store)
    return store
  }
  const closeAll = async () => {
    for (const store of open.splice(0).reverse()) await store.close()
  }
  let store = await openOne()
  return {
    get store() {
      return store
    },
    eventIdsUniqueAcrossStreams: false,
    openPeer: openOne,
    async restart() {
      await closeAll()
      store = await openOne()
    },
    // KurrentDB's data is not ours to remove: every spec writes to fresh categories.
    close: closeAll,
  }
}

if (CONNECTION) {
  const batches = await serverBatches(CONNECTION)
  eventStoreContract('esdb event store on KurrentDB', () => esdbUnderTest(CONNECTION), batches)
  if (batches === 'all-or-nothing') {
    eventStoreContract('esdb event store on KurrentDB, single-stream appends', () => esdbUnderTest(CONNECTION, true), 'stream-by-stream')
  }

  describe('esdb event store: connection loss', () => {
    let proxy: TcpProxy
    let direct: EventStore
    let proxied: EventStore
    beforeAll(async () => {
      const url = new URL(CONNECTION)
      proxy = await startTcpProxy(`tcp://${url.hostname}:${url.port || 2113}`)
      direct = await openForContract(CONNECTION)
      proxied = await openForContract(via(CONNECTION, Number(new URL(proxy.url).port)))
    })
    afterAll(async () => {
      await proxied?.close()
      await direct?.close()
      await proxy?.close()
    })

    it('keeps a live subscription going across a dropped connection, resuming where it was', async () => {
      const category = `drop${Math.random().toString(36).slice(2, 10)}`
      const start = await direct.headPosition()
      const delivered: RecordedEvent[] = []
      const errors: unknown[] = []
      const subscription = proxied.subscribe(start, async (events) => void delivered.push(...events), {
        categories: [category],
        onError: (error) => errors.push(error),
      })
      const write = (n: number) => direct.append(`${category}-1`, [{ id: crypto.randomUUID(), type: 'Counted', data: { n } }], 'any')
      await write(1)
      await eventually('the first event arrives', () => delivered.length === 1)

      proxy.down()
      await write(2)
      await eventually('the drop is reported', () => errors.length > 0)
      proxy.forward()
      await write(3)
      await eventually('every event arrives', () => delivered.length === 3, 30_000)
      await subscription.stop()

      expect(delivered).toEqual(await direct.readAll(start, { categories: [category] }))
      expect(delivered.map((e) => e.data.n)).toEqual([1, 2, 3])
    })
  })
} else {
  console.warn('[skipped] event store contract on KurrentDB: ESDB_CONNECTION_STRING is not set (no KurrentDB server here)')
  describe.skip('event store contract: esdb event store on KurrentDB', () => {
    it('runs when ESDB_CONNECTION_STRING names a KurrentDB server', () => {})
  })
}
