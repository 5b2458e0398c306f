import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, describe, expect, test } from 'vitest'
import { MAX_FEED_LINE_BYTES } from '../../src/domain/listings/feed.ts'
import { operatorHandler } from '../../src/operator/socket-handler.ts'
import { initialisedDataDir, type RunningServer, startServer } from '../support/server.ts'

/** The complete line of docs/feed-format.md as listing `id`, its title `pad` characters long when given. */
const line = (id: string, pad = 0) =>
  JSON.stringify({
    source: 'broker',
    source_id: id,
    country: 'GT',
    zone: 'Zona 10',
    operation: 'Venta',
    property_type: 'Apartamento',
    price: 1550000,
    currency: 'GTQ',
    area_m2: 98.5,
    bedrooms: 2,
    bathrooms: 2.5,
    title: pad ? 'x'.repeat(pad) : 'Apartamento en venta, Zona 10, 2 hab.',
    broker: { id: 'gt-brk-01', name: 'Inmobiliaria Los Altos' },
    url: 'https://gt-brk-01.example/propiedades/000123',
    listed_at: '2026-03-01T10:00:00-06:00',
    verified_at: '2026-03-02T09:30:00Z',
    status: 'active',
    observed_at: '2026-03-02T12:00:00Z',
  })

describe('a feed line over 1 MiB', () => {
  let server: RunningServer
  afterAll(() => server?.stop())

  test('the CLI refuses it by its number before sending it, and ingests the other lines', async () => {
    const dir = initialisedDataDir()
    server = await startServer({ DATA_DIR: dir })
    const file = join(dir, 'feed.ndjson')
    const big = line('big', MAX_FEED_LINE_BYTES)
    writeFileSync(file, `${line('one')}\n${big}\n${line('two')}\n`)
    const result = await server.cli('ingest', file)
    expect(result.code, result.stderr).toBe(1)
    expect(result.stderr).toContain(`line 2: ${Buffer.byteLength(big)} bytes; a feed line may be at most 1 MiB (1048576 bytes)`)
    expect(result.stdout).toMatch(/read 3, new 2, changed 0, unchanged 0, rejected 1/)
  })

  test("the server's operator socket refuses a command longer than it reads, with 413, before holding it", async () => {
    const handle = operatorHandler(() => {
      throw new Error('not reached')
    })
    const response = await handle(new Request('http://localhost/command', { method: 'POST', body: 'x'.repeat(16 * 1024 * 1024 + 1) }))
    expect(response.status).toBe(413)
    expect(await response.json()).toMatchObject({ ok: false, error: 'payload_too_large' })
  })
})
