/**
 * What the server reports to Prometheus, as a port: the composition root passes a recorder in
 * (src/metrics/prometheus.ts when METRICS_PORT is set, `noMetrics` otherwise), and nothing imports a
 * global registry. Every label value a caller passes must come from a bounded set (route templates,
 * HTTP methods and statuses, error codes, projection names and generations): never a key, an owner
 * id or a raw path.
 */

/** One answered request: the route template it matched (`unmatched` when none), and the error code it answered with, if any. */
export type RequestSample = { route: string; method: string; status: number; seconds: number; refusal: string | null }

/** One generation of a read model as `projections status` reports it. */
export type ProjectionSample = { projection: string; generation: string; state: string; position: number; head: number; lag_events: number; lag_seconds: number }

export type BriefingOutcome = 'generated' | 'cache_hit' | 'replayed'

/** One export of GET /listings/export, ended: its format, whether it was read to the end, listings and bytes sent, how long it took. */
export type ExportSample = { format: string; completed: boolean; listings: number; bytes: number; seconds: number }

export type Metrics = {
  request(sample: RequestSample): void
  /** A briefing recorded: generated (and charged), served from the cache, or replayed under an Idempotency-Key. */
  briefing(outcome: BriefingOutcome): void
  /** The writer failed to produce a briefing (the request answered 502 upstream_error). */
  writerFailed(): void
  /** One append (or batch of appends) to the event store, successful or not, and how long it took. */
  appended(operation: 'append' | 'appendMany', seconds: number): void
  /** Changes one answer of GET /listings/changes carried. */
  changesServed(count: number): void
  /** An export of GET /listings/export ended (read to the end, or cut off by the client or a failure). */
  exported(sample: ExportSample): void
  /** Where the projections' figures come from: read at each scrape, never in between. */
  projectionsFrom(read: () => Promise<readonly ProjectionSample[]>): void
  /** One attempt of a webhook message, by outcome (delivered, rejected, redirected, refused, unreachable, timeout). */
  webhookAttempted(outcome: string): void
  /** A webhook message delivered, this long after its change's time. */
  webhookDelivered(lagSeconds: number): void
  /** Where the webhook figures come from (subscriptions by status, lines waiting): read at each scrape. */
  webhooksFrom(read: () => Promise<WebhookSample>): void
}

/** Webhook subscriptions by status, and the active ones with a message waiting to be delivered. */
export type WebhookSample = { subscriptions: Record<string, number>; waiting: number }

/** Metrics off: every report costs a call that does nothing. */
export const noMetrics: Metrics = {
  request: () => {},
  briefing: () => {},
  writerFailed: () => {},
  appended: () => {},
  changesServed: () => {},
  exported: () => {},
  projectionsFrom: () => {},
  webhookAttempted: () => {},
  webhookDelivered: () => {},
  webhooksFrom: () => {},
}
