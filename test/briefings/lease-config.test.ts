import { describe, expect, test } from 'vitest'
import { ConfigError, loadConfig } from '../../src/config.ts'

describe('IDEMPOTENCY_LEASE_MS: how long a request holds its Idempotency-Key', () => {
  test('60 s by default, longer when two writer timeouts and a margin need more', () => {
    expect(loadConfig({}).idempotencyLeaseMs).toBe(60_000)
    expect(loadConfig({ OPENAI_TIMEOUT_MS: '30000' }).idempotencyLeaseMs).toBe(70_000)
  })

  test('can be shortened (tests, a fast writer) as long as it outlasts two writer timeouts', () => {
    expect(loadConfig({ OPENAI_TIMEOUT_MS: '1000', IDEMPOTENCY_LEASE_MS: '3000' }).idempotencyLeaseMs).toBe(3000)
    // A lease shorter than the writer may take would let a second request write the same key's briefing.
    expect(() => loadConfig({ IDEMPOTENCY_LEASE_MS: '5000' })).toThrow(ConfigError)
    expect(() => loadConfig({ IDEMPOTENCY_LEASE_MS: '5000' })).toThrow('IDEMPOTENCY_LEASE_MS must be an integer ≥ 41000, got "5000"')
  })
})
