/**
 * `npm run openapi`: writes docs/openapi.json, the document the server serves at /api/v1/openapi.json,
 * generated from the route declarations (a test fails when the two differ). The app is assembled
 * with dependencies that are never called: building the document only reads the route table.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { buildApp } from './app.ts'
import type { ApiDeps } from './app.ts'

const unused = new Proxy({}, {
  get() {
    throw new Error('not used to build the OpenAPI document')
  },
})
const deps = {
  keys: unused,
  limiter: unused,
  limits: { pro: 1, enterprise: 1 },
  clock: () => new Date(0),
  log: { info() {}, error() {} },
  accessLog: false,
  db: unused,
  briefings: { brief: unused, usage: unused },
} as unknown as ApiDeps

const response = await buildApp(deps).handle(new Request('http://localhost/api/v1/openapi.json'))
const target = join(import.meta.dirname, '../docs/openapi.json')
writeFileSync(target, `${JSON.stringify(await response.json(), null, 2)}\n`)
console.log(`wrote ${target}`)
