import { describe, expect, test } from 'vitest'
import { ConfigError, loadConfig } from '../../src/config.ts'

describe('METRICS_PORT', () => {
  test('off by default; a port of its own when set', () => {
    expect(loadConfig({}).metricsPort).toBeUndefined()
    expect(loadConfig({ METRICS_PORT: '' }).metricsPort).toBeUndefined()
    expect(loadConfig({ METRICS_PORT: '9464' }).metricsPort).toBe(9464)
  })

  test.each([
    [{ METRICS_PORT: '8080' }, /must differ from PORT/],
    [{ METRICS_PORT: '9000', PORT: '9000' }, /must differ from PORT/],
    [{ METRICS_PORT: 'nine' }, /METRICS_PORT must be an integer/],
    [{ METRICS_PORT: '0' }, /METRICS_PORT must be an integer ≥ 1/],
    [{ METRICS_PORT: '70000' }, /METRICS_PORT must be a port number/],
  ])('refused: %j', (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError)
    expect(() => loadConfig(env)).toThrow(message)
  })
})
