import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openEsdbEventStore } from '../../src/eventstore/esdb-event-store.ts'
import { EsdbMappingError } from '../../src/eventstore/esdb-mapping.ts'
import type { EventStore, RecordedEvent } from '../../src/eventstore/port.ts'
import { startTcpProxy, type TcpProxy } from '../ratelimit/tcp-proxy.ts'
import { eventually } from '../support/eventually.ts'
import { type EventStoreUnderTest, eventStoreContract } from './contract.ts'

/**
 * The contract against a real KurrentDB (25.1 or later), whenever ESDB_CONNECTION_STRING names one,
 * e.g. `kurrentdb://127.0.0.1:2113?tls=false`. No KurrentDB runs in CI here, so it is skipped there.
 */
const CONNECTION = process.env.ESDB_CONNECTION_STRING

/**
 * Opens the adapter; on a server without multi-stream appends (where Mirador refuses to start) it
 * says so and opens it anyway, batches over several streams refused, so that everything else can
 * still be checked against such a server by hand.
 */
let warned = false
async function openForContract(connection: string): Promise<EventStore> {
  try {
    return await openEsdbEventStore(connection)
  } catch (error) {
    if (!(error instanceof EsdbMappingError)) throw error
    if (!warned) console.warn(`[warning] ${error.message}; running the contract with batches over several streams refused`)
    warned = true
    return openEsdbEventStore(connection, { withoutMultiStreamAppend: 'single-stream-only' })
  }
}

/** The connection string with its host and port replaced (to go through a proxy). */
function via(connection: string, port: number): string {
  const url = new URL(connection)
  url.host = `127.0.0.1:${port}`
  return url.toString()
}

async function esdbUnderTest(connection: string): Promise<EventStoreUnderTest> {
  const open: EventStore[] = []
  const openOne = async () => {
    const store = await openForContract(connection)
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
  eventStoreContract('esdb event store on KurrentDB', () => esdbUnderTest(CONNECTION))

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
