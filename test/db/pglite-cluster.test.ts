import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { openPglite } from '../../src/db/pglite.ts'
import { freshCluster, prepareFreshCluster } from '../../src/db/pglite-fresh-cluster.ts'
import { pgliteModule } from '../../src/db/pglite-module.ts'

/**
 * A new embedded store starts as a copy of the fresh cluster made at install (decision 0119), with
 * a buffer pool of 32MB: the cluster identifier a copy keeps tells a copy from an initdb of its own.
 */
const identifierOf = async (query: (sql: string) => Promise<{ system_identifier: unknown }[]>) =>
  String((await query('select system_identifier from pg_control_system()'))[0]!.system_identifier)

describe('the embedded store (PGlite) opening a new cluster', () => {
  let fresh: string
  const dirs: string[] = []
  beforeAll(async () => {
    // Read from its control file (the first 8 bytes, little-endian): opening the fresh cluster would change it.
    fresh = readFileSync(join((await prepareFreshCluster()).dir, 'global/pg_control')).readBigUInt64LE(0).toString()
  })
  afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })))

  test('a new data directory is a copy of the fresh cluster, opened with a 32MB buffer pool, and stays the same cluster when opened again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mirador-fresh-'))
    dirs.push(dir)
    const store = join(dir, 'pglite')
    let db = await openPglite(store)
    expect(await identifierOf((sql) => db.query(sql))).toBe(fresh)
    expect(await db.query('show shared_buffers')).toEqual([{ shared_buffers: '32MB' }])
    await db.query('create table kept (n int)')
    await db.query('insert into kept values (1)')
    await db.close()
    db = await openPglite(store)
    expect(await db.query('select n from kept')).toEqual([{ n: 1 }])
    expect(await identifierOf((sql) => db.query(sql))).toBe(fresh)
    await db.close()
  })

  test('a cluster in memory is a copy of it too', async () => {
    const db = await openPglite()
    expect(await identifierOf((sql) => db.query(sql))).toBe(fresh)
    expect(await db.query('show shared_buffers')).toEqual([{ shared_buffers: '32MB' }])
    await db.close()
  })

  test("PGlite's WebAssembly module is compiled once per process, and the stores open with it", async () => {
    const compiled = await pgliteModule()
    expect(compiled).toBeInstanceOf(WebAssembly.Module)
    expect(pgliteModule()).toBe(pgliteModule())
    const db = await openPglite()
    expect(await db.query<{ answer: number }>('select 42 as answer')).toEqual([{ answer: 42 }])
    await db.close()
  })

  test('preparing it again finds the one made', async () => {
    expect(await prepareFreshCluster()).toEqual(freshCluster())
  })
})
