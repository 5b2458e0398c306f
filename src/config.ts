import { DEFAULT_LEASE_MS } from './domain/briefings/idempotency.ts'
import { DEFAULT_QUOTAS, type QuotaPolicy } from './domain/briefings/quota.ts'
import { defaultRateLimits, type RateLimits } from './ratelimit/port.ts'


export type Config = {
  port: number
  host: string
  dataDir: string
  /** PostgreSQL for events and read models; unset = embedded PGlite under dataDir. */
  databaseUrl: string | undefined
  /** KurrentDB for the events (read models stay in PostgreSQL or PGlite); unset = events beside the read models. */
  esdbConnectionString: string | undefined
  /**
   * A testing knob (tests and the ingest benchmark): the event store appends each stream of a batch
   * on its own, as on a KurrentDB older than 25.1, even where it could record the batch all or nothing.
   */
  singleStreamAppends: boolean
  /** Redis for shared rate-limit counters; unset = in-memory counters (single process). */
  redisUrl: string | undefined
  rateLimits: RateLimits
  quotas: QuotaPolicy
  openai: { apiKey: string | undefined; baseUrl: string | undefined; model: string; timeoutMs: number }
  /**
   * How long a request holds its Idempotency-Key (docs/idempotency.md): longer than the writer may take
   * (two OpenAI timeouts), so that no other request takes over a key whose briefing is still being written.
   */
  idempotencyLeaseMs: number
  /** Seed the demo market at start-up when the store holds no market data (no listing event). */
  demoOnEmpty: boolean
  demoListings: number | undefined
  accessLog: boolean
  /** Prometheus metrics at GET /metrics on this port (same HOST), apart from the API; unset = no metrics. */
  metricsPort: number | undefined
  /**
   * The key webhook secrets are derived from (WEBHOOK_SIGNING_KEY, at least 32 characters), the same
   * for every process of a deployment. Unset: the embedded store keeps one of its own in DATA_DIR;
   * with PostgreSQL, webhooks are off (503) until it is set.
   */
  webhookSigningKey: string | undefined
  /** WEBHOOKS_ALLOW_LOCAL: deliveries to http and to loopback or private addresses, for a receiver on this machine; never in production. */
  webhooksAllowLocal: boolean
}

export class ConfigError extends Error {}

function integer(env: Record<string, string | undefined>, name: string, fallback: number, min = 0): number {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!Number.isInteger(value) || value < min) throw new ConfigError(`${name} must be an integer ≥ ${min}, got "${raw}"`)
  return value
}

function flag(env: Record<string, string | undefined>, name: string, fallback: boolean): boolean {
  const raw = env[name]?.toLowerCase()
  if (raw === undefined || raw === '') return fallback
  if (['1', 'true', 'on', 'yes'].includes(raw)) return true
  if (['0', 'false', 'off', 'no'].includes(raw)) return false
  throw new ConfigError(`${name} must be on or off, got "${env[name]}"`)
}

/** Reads the whole configuration from environment variables (documented in README). */
export function loadConfig(env: Record<string, string | undefined>): Config {
  const optional = (name: string) => (env[name] ? env[name] : undefined)
  const writerTimeoutMs = integer(env, 'OPENAI_TIMEOUT_MS', 20_000, 1)
  return {
    port: integer(env, 'PORT', 8080),
    host: env.HOST || '0.0.0.0',
    dataDir: env.DATA_DIR || './data',
    databaseUrl: optional('DATABASE_URL'),
    esdbConnectionString: optional('ESDB_CONNECTION_STRING'),
    singleStreamAppends: flag(env, 'SINGLE_STREAM_APPENDS', false),
    redisUrl: optional('REDIS_URL'),
    rateLimits: {
      pro: integer(env, 'RATE_LIMIT_PRO', defaultRateLimits.pro, 1),
      enterprise: integer(env, 'RATE_LIMIT_ENTERPRISE', defaultRateLimits.enterprise, 1),
    },
    quotas: {
      pro: integer(env, 'QUOTA_PRO', DEFAULT_QUOTAS.pro),
      enterprise: integer(env, 'QUOTA_ENTERPRISE', DEFAULT_QUOTAS.enterprise),
    },
    openai: {
      apiKey: optional('OPENAI_API_KEY'),
      baseUrl: optional('OPENAI_BASE_URL'),
      model: env.OPENAI_MODEL || 'gpt-4o-mini',
      timeoutMs: writerTimeoutMs,
    },
    idempotencyLeaseMs: integer(env, 'IDEMPOTENCY_LEASE_MS', Math.max(DEFAULT_LEASE_MS, 2 * writerTimeoutMs + 10_000), 2 * writerTimeoutMs + 1000),
    demoOnEmpty: flag(env, 'DEMO_SEED', true),
    demoListings: env.DEMO_LISTINGS ? integer(env, 'DEMO_LISTINGS', 0, 1) : undefined,
    accessLog: flag(env, 'ACCESS_LOG', true),
    metricsPort: metricsPort(env),
    webhookSigningKey: signingKey(env),
    webhooksAllowLocal: flag(env, 'WEBHOOKS_ALLOW_LOCAL', false),
  }
}

/** Shorter keys are refused: every subscriber's secret is only as strong as this key. */
export const MIN_SIGNING_KEY_LENGTH = 32

function signingKey(env: Record<string, string | undefined>): string | undefined {
  const key = env.WEBHOOK_SIGNING_KEY
  if (!key) return undefined
  if (key.length < MIN_SIGNING_KEY_LENGTH) throw new ConfigError(`WEBHOOK_SIGNING_KEY must have at least ${MIN_SIGNING_KEY_LENGTH} characters (e.g. openssl rand -base64 48)`)
  return key
}

/** METRICS_PORT: off when unset; never the API's own port (the metrics share nothing with the API). */
function metricsPort(env: Record<string, string | undefined>): number | undefined {
  if (!env.METRICS_PORT) return undefined
  const port = integer(env, 'METRICS_PORT', 0, 1)
  if (port > 65535) throw new ConfigError(`METRICS_PORT must be a port number (1–65535), got "${env.METRICS_PORT}"`)
  if (port === integer(env, 'PORT', 8080)) throw new ConfigError(`METRICS_PORT must differ from PORT (${port}): the metrics are served apart from the API`)
  return port
}
