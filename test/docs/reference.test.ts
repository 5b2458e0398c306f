import { existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Browser, chromium, type Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { eventually } from '../support/eventually.ts'
import { OPERATIONS } from '../support/operations.ts'
import { BUN, initialisedDataDir, type RunningServer, runProgram, startServer } from '../support/server.ts'

const ROOT = join(import.meta.dirname, '../..')
/** Debian's Chromium (`apt-get install chromium`); no browser is ever downloaded. */
const CHROMIUM = '/usr/bin/chromium'
const hasChromium = existsSync(CHROMIUM)
if (!hasChromium) console.warn(`[skipped] the /docs page in a browser: ${CHROMIUM} is missing (apt-get install chromium)`)

describe('the API as its users meet it: the reference page and a typed client, on the real server', () => {
  let server: RunningServer
  let key = ''

  beforeAll(async () => {
    server = await startServer({ DATA_DIR: initialisedDataDir(), DEMO_SEED: 'on', ACCESS_LOG: 'off' })
    expect((await server.cli('owner', 'create', '--id', 'acme', '--tier', 'enterprise')).code).toBe(0)
    const issued = await server.cli('key', 'issue', '--owner', 'acme', '--scopes', 'read,write', '--actor', 'acme', '--json')
    key = (JSON.parse(issued.stdout) as { key: string }).key
    await eventually('the key works', async () => (await fetch(`${server.url}/api/v1/health`, { headers: { authorization: `Bearer ${key}` } })).ok)
  })
  afterAll(() => server?.stop())

  test('the example client, generated from docs/openapi.json, compiles and gets data from the server', async () => {
    const compiled = await runProgram(join(ROOT, 'node_modules/.bin/tsc'), ['--noEmit', '-p', 'examples'], {}, 300_000)
    expect(compiled, compiled.stdout + compiled.stderr).toMatchObject({ code: 0 })
    const report = await runProgram(BUN, ['examples/client/market-report.ts', 'CR'], { MIRADOR_URL: server.url, MIRADOR_KEY: key })
    expect(report.code, report.stdout + report.stderr).toBe(0)
    const [zones, history, listings, estimate, briefing] = report.stdout.trim().split('\n').map((line) => JSON.parse(line))
    expect(zones).toMatchObject({ country: 'CR', zones: expect.any(Number), cheapest_per_m2: expect.stringMatching(/^Zona \d+$/) })
    expect(zones.zones).toBeGreaterThanOrEqual(12)
    expect(history).toMatchObject({ zone: zones.cheapest_per_m2, months: expect.any(Number), median_ppm2_usd: expect.any(Array) })
    expect(history.months).toBeGreaterThanOrEqual(6)
    expect(listings.sales).toBeGreaterThan(0)
    expect(listings.cheapest_sale).toMatchObject({ id: expect.any(String), price_usd: expect.any(Number) })
    // A property like the cheapest sale: the listing itself is public, so it is among the candidates.
    expect(estimate).toMatchObject({ like: listings.cheapest_sale.id, comparables: expect.any(Array) })
    if (estimate.price_usd === null) expect(estimate).toMatchObject({ reason: 'too_few_comparables', comparables: [], level: null })
    else expect(estimate.comparables).toContain(listings.cheapest_sale.id)
    expect(briefing).toMatchObject({ zone: zones.cheapest_per_m2, verdict: expect.stringMatching(/^(BUY|HOLD|AVOID)$/), quota_used: 1 })
  })

  describe.skipIf(!hasChromium)('/docs in headless Chromium', () => {
    let browser: Browser
    beforeAll(async () => {
      browser = await chromium.launch({
        executablePath: CHROMIUM,
        args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
      })
    })
    afterAll(() => browser?.close())

    test('loads with no console errors, lists every endpoint, "Try it out" is off until asked for, and then with a key gets an answer from the server', async () => {
      const page = await browser.newPage()
      const problems: string[] = []
      page.on('console', (message) => message.type() === 'error' && problems.push(`console: ${message.text()}`))
      page.on('pageerror', (error) => problems.push(`page: ${error.message}`))
      page.on('requestfailed', (request) => problems.push(`request failed: ${request.url()}`))
      page.on('request', (request) => !request.url().startsWith(server.url) && !request.url().startsWith('data:') && problems.push(`left the server: ${request.url()}`))

      await page.goto(`${server.url}/docs`)
      const operations = page.locator('.opblock')
      // One block per operation of the API.
      const paths = OPERATIONS.map((operation) => operation.documented)
      await operations.nth(paths.length - 1).waitFor()
      expect(await operations.count()).toBe(paths.length)
      const listed = (await page.locator('.opblock-summary-path').allInnerTexts()).map((text) => text.replace(/\u200b/g, '').trim())
      expect(listed.sort()).toEqual(paths.sort())

      await page.locator('button.authorize').first().click()
      await page.locator('.modal-ux input').first().fill(key)
      await page.locator('.modal-ux button.authorize').click()
      await page.locator('.modal-ux button.btn-done').click()

      const health = page.locator('#operations-Account-getHealth')
      await health.locator('.opblock-summary').click()
      // An opened operation is for reading: no request can be sent until "Try it out" is clicked.
      await health.locator('button.try-out__btn').waitFor()
      expect(await health.locator('button.execute').count()).toBe(0)
      await health.locator('button.try-out__btn').click()
      await health.locator('button.execute').click()
      const status = health.locator('.live-responses-table tbody .response-col_status').first()
      await status.waitFor()
      expect((await status.innerText()).trim()).toBe('200')
      expect(await health.locator('.live-responses-table tbody .response-col_description').first().innerText()).toContain('"service": "mirador"')

      await page.screenshot({ path: join(tmpdir(), 'mirador-docs.png'), fullPage: true })
      expect(problems).toEqual([])
    })

    /** Opens an operation of /docs, turns "Try it out" on, clicks Execute and returns the request the page sent. */
    const tryOut = async (page: Page, id: string) => {
      const operation = page.locator(`#operations-Market-${id}`)
      await operation.locator('.opblock-summary').click()
      await operation.locator('button.try-out__btn').click()
      const sent = page.waitForRequest((request) => request.url().startsWith(`${server.url}/api/v1/`))
      await operation.locator('button.execute').click()
      return { operation, request: await sent }
    }

    test('optional parameters start empty when tried out: Execute on /zones and /listings sends no example or default', async () => {
      const page = await browser.newPage()
      await page.goto(`${server.url}/docs`)
      const zones = page.locator('#operations-Market-listZones')
      await zones.locator('.opblock-summary').click()
      // Read first: the example and the default stay in view.
      await expect.poll(() => zones.locator('.parameters-col_description').allInnerTexts()).toEqual(
        expect.arrayContaining([expect.stringContaining('Example : 2026-04-01T00:00:00Z'), expect.stringContaining('Default value : GT')]),
      )
      await zones.locator('.opblock-summary').click()
      const tried = await tryOut(page, 'listZones')
      expect(new URL(tried.request.url()).search).toBe('')
      const asOf = tried.operation.locator('tr[data-param-name="as_of"] input')
      expect(await asOf.inputValue()).toBe('')
      expect(await asOf.getAttribute('placeholder')).toContain('2026-04-01T00:00:00Z')
      const listings = await tryOut(page, 'searchListings')
      expect(new URL(listings.request.url()).search).toBe('')
      // A value typed in is sent.
      await asOf.fill('2026-05-01T00:00:00Z')
      const again = page.waitForRequest((request) => request.url().startsWith(`${server.url}/api/v1/zones`))
      await tried.operation.locator('button.execute').click()
      expect(new URL((await again).url()).searchParams.get('as_of')).toBe('2026-05-01T00:00:00Z')
    })

    test('the key given to "Authorize" is still there after a reload, and Execute sends it', async () => {
      const context = await browser.newContext()
      const page = await context.newPage()
      await page.goto(`${server.url}/docs`)
      await page.locator('button.authorize').first().click()
      await page.locator('.modal-ux input').first().fill(key)
      await page.locator('.modal-ux button.authorize').click()
      await page.locator('.modal-ux button.btn-done').click()
      await page.reload()
      await page.locator('#operations-Market-listZones').waitFor()
      const { request } = await tryOut(page, 'listZones')
      expect(request.headers().authorization).toBe(`Bearer ${key}`)
      await context.close()
    })

    test('a briefing tried out starts with an empty Idempotency-Key: trying it twice with another zone is never a 409', async () => {
      const page = await browser.newPage()
      await page.goto(`${server.url}/docs`)
      const investor = page.locator('.opblock-post').filter({ hasText: '/api/v1/briefings/investor' })
      await investor.locator('.opblock-summary').waitFor()
      if ((await investor.locator('button.try-out__btn').count()) === 0) await investor.locator('.opblock-summary').click()
      await investor.locator('button.try-out__btn').click()
      const idempotencyKey = investor.locator('tr[data-param-name="Idempotency-Key"] input')
      await idempotencyKey.waitFor()
      expect(await idempotencyKey.inputValue()).toBe('')
      expect(await idempotencyKey.getAttribute('placeholder')).not.toMatch(/order-4711/)
    })
  })
})
