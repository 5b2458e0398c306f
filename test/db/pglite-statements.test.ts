import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { openPglite } from '../../src/db/pglite.ts'
import type { Db } from '../../src/db/port.ts'

/**
 * The embedded store runs each statement text as a statement prepared once per session (decision
 * 0120): answers, errors, transactions and plans must be those PGlite's own `query` gave.
 */
describe('the embedded store (PGlite) running prepared statements', () => {
  let db: Db
  beforeEach(async () => {
    db = await openPglite()
    await db.exec('create table item (id int primary key, name text, price numeric, body jsonb, raw bytea, seen timestamptz, big bigint)')
  })
  afterEach(() => db.close())

  test('parameters of every type the project sends arrive as sent, and come back parsed (int8 as a number, as PGlite parses it), on the first run of a text and on later ones', async () => {
    const insert = 'insert into item values ($1, $2, $3, $4::text::jsonb, $5, $6, $7) returning *'
    const first = await db.query(insert, [1, 'Casa', '125000.50', JSON.stringify({ a: [1, 'x'] }), new Uint8Array([0, 255, 7]), '2026-01-02T03:04:05.678Z', 9_007_199_254_740_991n])
    const second = await db.query(insert, [2, null, null, '{}', null, null, 5])
    expect(first).toEqual([
      { id: 1, name: 'Casa', price: '125000.50', body: { a: [1, 'x'] }, raw: new Uint8Array([0, 255, 7]), seen: new Date('2026-01-02T03:04:05.678Z'), big: 9_007_199_254_740_991 },
    ])
    expect(second).toEqual([{ id: 2, name: null, price: null, body: {}, raw: null, seen: null, big: 5 }])
  })

  test('a statement that fails leaves the session usable, and the same text runs again', async () => {
    const insert = 'insert into item (id, name) values ($1, $2)'
    await db.query(insert, [1, 'a'])
    await expect(db.query(insert, [1, 'again'])).rejects.toMatchObject({ code: '23505' })
    await expect(db.query('select nope from item where id = $1', [1])).rejects.toMatchObject({ code: '42703' })
    await db.query(insert, [2, 'b'])
    expect(await db.query('select id, name from item order by id')).toEqual([
      { id: 1, name: 'a' },
      { id: 2, name: 'b' },
    ])
  })

  test('a failing statement rolls its transaction back, and nothing of it is kept', async () => {
    const insert = 'insert into item (id, name) values ($1, $2)'
    await expect(
      db.transaction(async (tx) => {
        await tx.query(insert, [1, 'a'])
        await tx.query(insert, [1, 'duplicate'])
      }),
    ).rejects.toMatchObject({ code: '23505' })
    expect(await db.query('select count(*)::int as n from item')).toEqual([{ n: 0 }])
  })

  test('a statement outside a transaction waits for the transaction running, and sees it only once committed', async () => {
    let release!: () => void
    let begun!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    const inside = new Promise<void>((resolve) => (begun = resolve))
    const transaction = db.transaction(async (tx) => {
      await tx.query('insert into item (id) values ($1)', [1])
      begun()
      await held
      await tx.query('insert into item (id) values ($1)', [2])
    })
    await inside
    const counted = db.query<{ n: number }>('select count(*)::int as n from item where id > $1', [0])
    await new Promise((resolve) => setTimeout(resolve, 50))
    release()
    await transaction
    expect(await counted).toEqual([{ n: 2 }])
  })

  test('a `select *` whose table changed since it was prepared answers with the table as it is now', async () => {
    const all = 'select * from item where id = $1'
    await db.query('insert into item (id, name) values ($1, $2)', [1, 'a'])
    expect(await db.query(all, [1])).toHaveLength(1)
    await db.exec('alter table item add column extra text default $$new$$')
    expect(await db.query(all, [1])).toEqual([expect.objectContaining({ id: 1, name: 'a', extra: 'new' })])
  })

  test('inside a transaction too, a `select *` after a schema change answers with the table as it is now', async () => {
    const all = 'select * from item where id = $1'
    await db.query('insert into item (id, name) values ($1, $2)', [1, 'a'])
    expect(await db.query(all, [1])).toHaveLength(1)
    const rows = await db.transaction(async (tx) => {
      await tx.query('alter table item add column later int default 7')
      return tx.query(all, [1])
    })
    expect(rows).toEqual([expect.objectContaining({ id: 1, later: 7 })])
  })

  test('many more texts than are kept prepared are each answered correctly, the first again after the others', async () => {
    for (let n = 0; n < 600; n++) expect(await db.query(`select $1::int + ${n} as total`, [1])).toEqual([{ total: n + 1 }])
    expect(await db.query('select $1::int + 0 as total', [41])).toEqual([{ total: 41 }])
  })

  test('each execution is planned for its values, as on PostgreSQL', async () => {
    expect(await db.query('show plan_cache_mode')).toEqual([{ plan_cache_mode: 'force_custom_plan' }])
  })
})
