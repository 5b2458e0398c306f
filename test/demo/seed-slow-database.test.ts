import { mkdtempSync, rmSync } from 'node:fs'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { openPostgres } from '../../src/db/postgres.ts'
import { seedDemo } from '../../src/demo/seed.ts'
import { openSqlEventStore } from '../../src/eventstore/sql-event-store.ts'
import { openListingInventory } from '../../src/read-models.ts'
import { openStorage, type Storage } from '../../src/storage.ts'
import { uniqueSchema } from '../support/databases.ts'
import { ANCHOR } from '../support/market.ts'

/**
 * Seeding the demo, and the rest of a server's start-up, is not a request: it has no request's bound
 * (src/runtime/dependency.ts), and it must not fail because PostgreSQL is slow, as it is on a busy
 * machine. test/demo/seed.test.ts once failed under load with "the read-model database is
 * unavailable": a connection that took PostgreSQL more than the 2 s of postgres.js's connect timeout
 * to open (CONNECT_TIMEOUT), a bound meant for requests. On a machine whose other processes took every
 * one of PostgreSQL's connections, a CLI command failed the same way (53300, too many clients).
 */

const DATABASE_URL = process.env.DATABASE_URL
if (!DATABASE_URL) console.warn('[skipped] start-up work on a slow PostgreSQL: DATABASE_URL is not set')

/** Longer than the connect timeout of src/db/postgres.ts (2 s). */
const SLOW_OPEN_MS = 2500

/** One field of a PostgreSQL ErrorResponse: its type byte, then the text and a zero byte. */
const errorField = (type: string, text: string) => Buffer.concat([Buffer.from(type), Buffer.from(text), Buffer.from([0])])
/** What PostgreSQL answers a connection it has no slot for (max_connections reached): FATAL 53300, then it closes. */
const TOO_MANY_CLIENTS = (() => {
  const fields = Buffer.concat([
    errorField('S', 'FATAL'),
    errorField('V', 'FATAL'),
    errorField('C', '53300'),
    errorField('M', 'sorry, too many clients already'),
    Buffer.from([0]),
  ])
  const length = Buffer.alloc(4)
  length.writeInt32BE(4 + fields.length)
  return Buffer.concat([Buffer.from('E'), length, fields])
})()

/**
 * A TCP proxy in front of PostgreSQL whose new connections, for a while, meet a PostgreSQL in trouble:
 * `saturateFor` holds each for SLOW_OPEN_MS before any byte flows (too busy to start a backend in
 * time); `fullFor` answers each as PostgreSQL does when every one of its max_connections is taken.
 * Connections opened before or after flow at once. `slowlyOpened` and `refused` count them.
 */
async function troubledPostgres(url: string) {
  const target = new URL(url)
  let trouble: { kind: 'slow' | 'full'; until: number } | null = null
  let [slowlyOpened, refused] = [0, 0]
  const sockets = new Set<net.Socket>()
  const server = net.createServer((client) => {
    sockets.add(client)
    client.on('error', () => client.destroy()).on('close', () => sockets.delete(client))
    const now = trouble && Date.now() < trouble.until ? trouble.kind : null
    if (now === 'full') {
      refused++
      // After the client's startup message, as PostgreSQL does.
      client.once('data', () => client.end(TOO_MANY_CLIENTS))
      return
    }
    const upstream = net.connect(Number(target.port || 5432), target.hostname)
    sockets.add(upstream)
    upstream.on('error', () => client.destroy()).on('close', () => client.destroy())
    client.on('close', () => upstream.destroy())
    const link = () => {
      if (client.destroyed || upstream.destroyed) return
      client.pipe(upstream)
      upstream.pipe(client)
    }
    if (now !== 'slow') return link()
    slowlyOpened++
    client.pause()
    setTimeout(link, SLOW_OPEN_MS)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const proxied = new URL(url)
  proxied.hostname = '127.0.0.1'
  proxied.port = String((server.address() as net.AddressInfo).port)
  return {
    /** The proxy's URL, on `schema`. */
    url: (schema: string) => {
      proxied.searchParams.set('search_path', schema)
      return proxied.toString()
    },
    /** Connections opened in the next `ms` are slow to open. */
    saturateFor: (ms: number) => void (trouble = { kind: 'slow', until: Date.now() + ms }),
    /** Connections opened in the next `ms` are refused for want of a slot. */
    fullFor: (ms: number) => void (trouble = { kind: 'full', until: Date.now() + ms }),
    get slowlyOpened() {
      return slowlyOpened
    },
    get refused() {
      return refused
    },
    async close() {
      for (const socket of sockets) socket.destroy()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

describe.runIf(DATABASE_URL)('start-up work on a PostgreSQL too busy to open connections in time', () => {
  const cleanups: (() => Promise<unknown> | unknown)[] = []
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  })

  /** A troubled PostgreSQL (the proxy) and the URL of a fresh schema through it; both gone after the spec. */
  async function troubled(label: string) {
    const proxy = await troubledPostgres(DATABASE_URL!)
    cleanups.push(() => proxy.close())
    const schema = uniqueSchema(label)
    cleanups.push(() => dropSchema(schema))
    return { proxy, url: proxy.url(schema) }
  }

  async function storageThrough(url: string): Promise<Storage> {
    const dataDir = mkdtempSync(join(tmpdir(), 'mirador-slow-'))
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }))
    const storage = await openStorage({ databaseUrl: url, dataDir, esdbConnectionString: undefined, singleStreamAppends: false })
    cleanups.push(() => storage.close())
    return storage
  }

  it('opens the storage, seeds the demo and catches the read models up, while connections take longer than the connect timeout to open', async () => {
    const { proxy, url } = await troubled('slow')
    // The whole start-up meets the saturation: the first connections of the pool take 2.5 s each.
    proxy.saturateFor(4000)

    const storage = await storageThrough(url)
    const summary = await seedDemo(storage.store, { seed: 'slow', listings: 120, anchor: ANCHOR })
    await storage.runner.catchUp()
    const inventory = await openListingInventory(storage, (error) => {
      throw error
    })
    cleanups.push(() => inventory.stop())

    expect(proxy.slowlyOpened).toBeGreaterThan(0)
    expect(summary).toMatchObject({ listings: 120, new: 120, unchanged: 0 })
    expect(inventory.size.listings).toBeGreaterThan(0)
    expect(await seedDemo(storage.store, { seed: 'slow', listings: 120, anchor: ANCHOR })).toMatchObject({ new: 0, changed: 0, unchanged: summary.read })
  })

  it('seeds the demo into a store opened as PostgreSQL turns too busy to open connections in time (test/demo/seed.test.ts under load)', async () => {
    const { proxy, url } = await troubled('slow')
    const db = await openPostgres(url)
    cleanups.push(() => db.close())
    // The store's connections (its LISTEN, the pool's next ones) are opened while PostgreSQL is saturated.
    proxy.saturateFor(4000)
    const store = await openSqlEventStore(db)
    cleanups.push(() => store.close())
    const summary = await seedDemo(store, { seed: 'slow', listings: 120, anchor: ANCHOR })

    expect(proxy.slowlyOpened).toBeGreaterThan(0)
    expect(summary).toMatchObject({ listings: 120, new: 120, unchanged: 0 })
    expect(await seedDemo(store, { seed: 'slow', listings: 120, anchor: ANCHOR })).toMatchObject({ new: 0, changed: 0, unchanged: summary.read })
  })

  it('seeds the demo while PostgreSQL has no connection slot left (53300, too many clients) for a while', async () => {
    const { proxy, url } = await troubled('slots')
    const db = await openPostgres(url)
    cleanups.push(() => db.close())
    const store = await openSqlEventStore(db)
    cleanups.push(() => store.close())
    // Every connection the pool opens in the next 1.5 s is refused; the seeding and eight statements at
    // once need more than the one the store has opened. (The store's LISTEN, opened before, is not
    // opened again here: a LISTEN refused for want of a slot fails the store's opening.)
    proxy.fullFor(1500)
    const [summary] = await Promise.all([
      seedDemo(store, { seed: 'slots', listings: 120, anchor: ANCHOR }),
      ...Array.from({ length: 8 }, () => db.query('select 1 as one')),
    ])

    expect(proxy.refused).toBeGreaterThan(0)
    expect(summary).toMatchObject({ listings: 120, new: 120, unchanged: 0 })
  })

  it('seeds the demo while the event log is locked for longer than a request may wait (1 s)', async () => {
    const schema = uniqueSchema('slow')
    cleanups.push(() => dropSchema(schema))
    const url = new URL(DATABASE_URL!)
    url.searchParams.set('search_path', schema)
    const storage = await storageThrough(url.toString())
    const other = await openPostgres(DATABASE_URL!, { schema, max: 1 })
    cleanups.push(() => other.close())

    let held!: () => void
    const release = new Promise<void>((resolve) => (held = resolve))
    let locked!: () => void
    const lockTaken = new Promise<void>((resolve) => (locked = resolve))
    const holding = other.transaction(async (tx) => {
      await tx.query('lock table mirador_events in access exclusive mode')
      locked()
      await release
    })
    await lockTaken
    const seeding = seedDemo(storage.store, { seed: 'locked', listings: 120, anchor: ANCHOR })
    // Past a request's bound on one call (CALL_DEADLINE_MS) with the seeding's first write waiting on the lock.
    await new Promise((resolve) => setTimeout(resolve, 1500))
    held()
    await holding

    expect(await seeding).toMatchObject({ listings: 120, new: 120, unchanged: 0 })
  })
})

async function dropSchema(schema: string) {
  const db = await openPostgres(DATABASE_URL!, { max: 1 })
  await db.exec(`drop schema if exists ${schema} cascade`)
  await db.close()
}
