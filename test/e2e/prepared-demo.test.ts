import { afterAll, expect, test } from 'vitest'
import { demoOfFirstStart, prepareDemo } from '../../src/prepared-demo.ts'
import { type RunningServer, startServer, tempDataDir } from '../support/server.ts'

let server: RunningServer | undefined
afterAll(() => server?.stop())

// Prepared here as `npm ci`'s postinstall prepares it (a no-op when it did, today, with this code).
test('npm start on an empty data directory starts from the demo market prepared at install, and serves all of it', async () => {
  const prepared = await prepareDemo(demoOfFirstStart({ demoListings: undefined }, new Date()))
  server = await startServer({ DATA_DIR: tempDataDir('mirador-prepared-demo-'), DEMO_SEED: 'on' })
  const seeded = server
    .output()
    .split('\n')
    .find((line) => line.includes('"event":"demo_seeded"'))
  expect(JSON.parse(seeded!)).toMatchObject({ prepared, listings: 2000 })

  await server.cli('owner', 'create', '--id', 'newcomer', '--tier', 'enterprise')
  const { key } = JSON.parse((await server.cli('key', 'issue', '--owner', 'newcomer', '--scopes', 'read', '--actor', 'newcomer', '--json')).stdout)
  const zones = await fetch(`${server.url}/api/v1/zones?country=BR`, { headers: { authorization: `Bearer ${key}` } })
  expect(zones.status).toBe(200)
  expect(((await zones.json()) as { count: number }).count).toBe(18)
}, 120_000)
