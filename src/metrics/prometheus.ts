import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client'
import { setInterval } from 'node:timers'
import type { Metrics, ProjectionSample, WebhookSample } from './port.ts'

/** Seconds: from sub-millisecond answers from memory to a slow writer. */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]
const APPEND_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]

export type PrometheusMetrics = Metrics & {
  /** The exposition text and its content type, for GET /metrics. */
  scrape(): Promise<{ body: string; contentType: string }>
}

/** The change feed's and the export's series (docs/api.md, "Staying in sync"). */
function feedMetrics(registry: Registry) {
  const counter = (name: string, help: string, labelNames: string[] = []) => new Counter({ name, help, labelNames, registers: [registry] })
  const changes = counter('mirador_listing_changes_served_total', 'Changes answered by GET /listings/changes (each change of each answer)')
  changes.inc(0)
  return {
    changes,
    exports: counter(
      'mirador_listing_exports_total',
      'Exports of GET /listings/export ended, by format and outcome (completed: read to the end; cut: the client left or a failure ended it)',
      ['format', 'outcome'],
    ),
    exportedBytes: counter('mirador_listing_export_bytes_total', 'Bytes sent by exports, by format (compressed when the client accepted it)', ['format']),
    exportedListings: counter('mirador_listing_export_listings_total', 'Listings sent by exports, by format', ['format']),
    exportSeconds: new Histogram({
      name: 'mirador_listing_export_duration_seconds',
      help: 'Time from the start of an export to its end, by format',
      labelNames: ['format'],
      buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
      registers: [registry],
    }),
  }
}

/** The webhooks' series (docs/api.md, "Webhooks"); `from` sets where the gauges read (once the worker runs). */
function webhookMetrics(registry: Registry) {
  const attempts = new Counter({ name: 'mirador_webhook_attempts_total', help: 'Webhook messages sent (or refused before sending) by this process, by outcome', labelNames: ['outcome'], registers: [registry] })
  for (const outcome of ['delivered', 'rejected', 'redirected', 'refused', 'unreachable', 'timeout']) attempts.labels(outcome).inc(0)
  const lag = new Histogram({
    name: 'mirador_webhook_delivery_lag_seconds',
    help: 'Time from a change (its `at`) to its message being delivered (a 2xx), retries included',
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 3600],
    registers: [registry],
  })
  let read: () => Promise<WebhookSample> = async () => ({ subscriptions: {}, waiting: 0 })
  new Gauge({
    name: 'mirador_webhook_subscriptions',
    help: 'Webhook subscriptions by status (active, disabled, deleted)',
    labelNames: ['status'],
    registers: [registry],
    async collect() {
      const { subscriptions } = await read()
      this.reset()
      for (const [status, n] of Object.entries(subscriptions)) this.labels(status).set(n)
    },
  })
  new Gauge({
    name: 'mirador_webhook_waiting_subscriptions',
    help: 'Active webhook subscriptions with a message waiting to be delivered (the delivery backlog)',
    registers: [registry],
    async collect() {
      this.set((await read()).waiting)
    },
  })
  return { attempts, lag, from: (reader: () => Promise<WebhookSample>) => (read = reader) }
}

/** The series this process records, registered in `registry`; those that exist from the start read 0. */
function applicationMetrics(registry: Registry) {
  const requests = new Counter({
    name: 'mirador_http_requests_total',
    help: 'Requests answered, by route template, method and status',
    labelNames: ['route', 'method', 'status'],
    registers: [registry],
  })
  const latency = new Histogram({
    name: 'mirador_http_request_duration_seconds',
    help: 'Time from receiving a request to having answered it, by route template and method',
    labelNames: ['route', 'method'],
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  })
  const refusals = new Counter({
    name: 'mirador_http_refusals_total',
    help: 'Error answers by error code (rate_limit: the hourly limit; quota_exceeded: the monthly briefing quota)',
    labelNames: ['code'],
    registers: [registry],
  })
  const briefings = new Counter({
    name: 'mirador_briefings_total',
    help: 'Briefings recorded by this process: generated (charged), cache_hit, replayed',
    labelNames: ['outcome'],
    registers: [registry],
  })
  const writerFailures = new Counter({
    name: 'mirador_briefing_writer_failures_total',
    help: 'Briefings the writer failed to produce (answered 502 upstream_error)',
    registers: [registry],
  })
  const appends = new Histogram({
    name: 'mirador_event_store_append_duration_seconds',
    help: 'Event store appends by this process, by operation (append: one stream; appendMany: a batch)',
    labelNames: ['operation'],
    buckets: APPEND_BUCKETS,
    registers: [registry],
  })
  const feed = feedMetrics(registry)
  // Series that exist from the start read 0 rather than missing, so rates and alerts work from the first scrape.
  for (const operation of ['append', 'appendMany']) appends.zero({ operation })
  for (const outcome of ['generated', 'cache_hit', 'replayed']) briefings.labels(outcome).inc(0)
  for (const code of ['rate_limit', 'quota_exceeded']) refusals.labels(code).inc(0)
  return { requests, latency, refusals, briefings, writerFailures, appends, feed }
}

/**
 * The four gauges of the projections, registered in `registry`, reading what `read()` returns once
 * per scrape (shared by the four). Returns how to set `read`: it is known only once the projections run.
 */
function projectionGauges(registry: Registry): (read: () => Promise<readonly ProjectionSample[]>) => void {
  let readProjections: () => Promise<readonly ProjectionSample[]> = async () => []
  let reading: Promise<readonly ProjectionSample[]> | null = null
  const projections = () => (reading ??= readProjections().finally(() => setTimeout(() => (reading = null), 100)))
  const projectionGauge = (name: string, help: string, value: (p: ProjectionSample) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['projection', 'generation', 'state'],
      registers: [registry],
      async collect() {
        this.reset()
        for (const p of await projections()) this.set({ projection: p.projection, generation: p.generation, state: p.state }, value(p))
      },
    })
  projectionGauge('mirador_projection_position', 'Log position a generation has applied', (p) => p.position)
  projectionGauge('mirador_projection_head', 'Log position of the newest event, as seen for that generation', (p) => p.head)
  projectionGauge('mirador_projection_lag_events', 'Log positions between a generation and the head (0 when nothing of its categories is pending)', (p) => p.lag_events)
  projectionGauge('mirador_projection_lag_seconds', 'Age of the oldest event a generation has still to apply', (p) => p.lag_seconds)
  return (read) => {
    readProjections = read
  }
}

/** What `mirador_build_info` says of the process: the version of package.json, and `bun`, `node` or `deno`. */
export type BuildInfo = { version: string; runtime: string }

/**
 * prom-client's process metrics, registered in `registry`. `process_*` (CPU, memory, open files,
 * start time) are read from the operating system and hold on every runtime; `nodejs_*` name Node
 * and V8, and under Bun and Deno several of them are wrong (Node's version is the runtime's
 * compatibility version; Bun's handle counts and heap spaces are stubs, Deno's event-loop lag
 * misses a blocked loop): they are kept on Node only.
 */
function processMetrics(registry: Registry, runtime: string): void {
  collectDefaultMetrics({ register: registry })
  if (runtime !== 'node') {
    for (const metric of registry.getMetricsAsArray()) {
      if (metric.name.startsWith('nodejs_')) registry.removeSingleMetric(metric.name)
    }
  }
  runtimeMetrics(registry)
}

/** How often the event loop is sampled: a timer due every this many milliseconds. */
const LOOP_SAMPLE_MS = 100

/**
 * What every runtime measures truly, under names of our own: the engine's heap in use (V8 on Node
 * and Deno, JavaScriptCore on Bun) and how late a timer due every 100 ms fired, at most, since the
 * previous scrape (a blocked event loop shows as its length). The timer keeps no process alive.
 */
function runtimeMetrics(registry: Registry): void {
  let latest = performance.now()
  let worstLag = 0
  setInterval(() => {
    const now = performance.now()
    worstLag = Math.max(worstLag, now - latest - LOOP_SAMPLE_MS)
    latest = now
  }, LOOP_SAMPLE_MS).unref()
  new Gauge({
    name: 'mirador_event_loop_lag_seconds',
    help: `Longest delay of a timer due every ${LOOP_SAMPLE_MS} ms since the previous scrape: how long the event loop was blocked`,
    registers: [registry],
    collect() {
      this.set(Math.max(0, worstLag) / 1000)
      worstLag = 0
    },
  })
  new Gauge({
    name: 'mirador_heap_used_bytes',
    help: "JavaScript heap in use (V8's on Node and Deno, JavaScriptCore's on Bun)",
    registers: [registry],
    collect() {
      this.set(process.memoryUsage().heapUsed)
    },
  })
}

/**
 * The recorder on prom-client (docs/decisions.md, "Metrics"): one registry per process, no global
 * state, the process's own metrics (CPU, memory, and on Node event-loop lag and heap) included, and
 * `mirador_build_info` (1, labelled with the version and the runtime).
 */
export function prometheusMetrics(build: BuildInfo): PrometheusMetrics {
  const registry = new Registry()
  processMetrics(registry, build.runtime)
  new Gauge({ name: 'mirador_build_info', help: 'Always 1: the version of Mirador (package.json) and the runtime (bun, node, deno) this process runs on', labelNames: ['version', 'runtime'], registers: [registry] }).set(build, 1)
  const { requests, latency, refusals, briefings, writerFailures, appends, feed } = applicationMetrics(registry)
  const projectionsFrom = projectionGauges(registry)
  const webhooks = webhookMetrics(registry)

  // The labelled series of each route, method and status, found once (prom-client hashes the labels on every `labels` call).
  const series = new Map<string, { count: { inc(): void }; duration: { observe(value: number): void } }>()
  const refused = new Map<string, { inc(): void }>()
  const refusalsOf = (code: string) => refused.get(code) ?? refused.set(code, refusals.labels(code)).get(code)!
  return {
    request(sample) {
      const key = `${sample.route} ${sample.method} ${sample.status}`
      let found = series.get(key)
      if (!found) {
        found = { count: requests.labels(sample.route, sample.method, String(sample.status)), duration: latency.labels(sample.route, sample.method) }
        series.set(key, found)
      }
      found.count.inc()
      found.duration.observe(sample.seconds)
      if (sample.refusal) refusalsOf(sample.refusal).inc()
    },
    briefing: (outcome) => briefings.labels(outcome).inc(),
    writerFailed: () => writerFailures.inc(),
    appended: (operation, seconds) => appends.labels(operation).observe(seconds),
    changesServed: (count) => feed.changes.inc(count),
    exported({ format, completed, listings, bytes, seconds }) {
      feed.exports.labels(format, completed ? 'completed' : 'cut').inc()
      feed.exportedBytes.labels(format).inc(bytes)
      feed.exportedListings.labels(format).inc(listings)
      feed.exportSeconds.labels(format).observe(seconds)
    },
    projectionsFrom,
    webhookAttempted: (outcome) => webhooks.attempts.labels(outcome).inc(),
    webhookDelivered: (seconds) => webhooks.lag.observe(seconds),
    webhooksFrom: webhooks.from,
    async scrape() {
      return { body: await registry.metrics(), contentType: registry.contentType }
    },
  }
}

/** The path of a request's URL; none when the runtime handed over a URL that does not parse (an odd Host). */
function pathOf(url: string): string | undefined {
  try {
    return new URL(url).pathname
  } catch {
    return undefined
  }
}

/** The metrics server's answers: GET (or HEAD) /metrics, and 404 for anything else. No key, no limit: it is another port. */
export function metricsHandler(metrics: PrometheusMetrics): (request: Request) => Promise<Response> {
  return async (request) => {
    if (pathOf(request.url) !== '/metrics' || (request.method !== 'GET' && request.method !== 'HEAD')) {
      return new Response('not found: the metrics are at GET /metrics\n', { status: 404, headers: { 'content-type': 'text/plain' } })
    }
    const { body, contentType } = await metrics.scrape()
    return new Response(request.method === 'HEAD' ? null : body, { headers: { 'content-type': contentType } })
  }
}
