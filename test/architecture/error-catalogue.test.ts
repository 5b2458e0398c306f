import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import { describe, expect, test } from 'vitest'
import { ERROR_CATALOGUE, type ErrorCode, fail } from '../../src/shared/errors.ts'

/**
 * One error catalogue: every error code is built in src/shared/errors.ts (`fail`), with the status,
 * body fields and headers its catalogue entry names, and nowhere else. A new refusal is a call to a
 * constructor of `fail`, never a hand-made AppError.
 */

const ROOT = resolve(import.meta.dirname, '../..')
const CATALOGUE_FILE = 'src/shared/errors.ts'

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : []
  })
}

/** One error of each constructor, built with sample arguments. */
const SAMPLES = [
  fail.authRequired('m'),
  fail.invalidKey('m'),
  fail.tierRequired('m'),
  fail.scopeDenied('m'),
  fail.forbidden('m'),
  fail.rateLimit('m', { limit: 100, used: 100, retryAfterSeconds: 60 }, { 'X-RateLimit-Limit': '100', 'X-RateLimit-Remaining': '0', 'X-RateLimit-Reset': '1' }),
  fail.invalidRequest('m', [{ field: 'f', message: 'bad' }]),
  fail.invalidCursor('after', 'bad'),
  fail.notFound('m'),
  fail.quotaExceeded('m', { used: 50, quota: 50, resetsAt: '2026-06-01T00:00:00.000Z' }, 60),
  fail.methodNotAllowed('m', 'GET'),
  fail.payloadTooLarge('m'),
  fail.conflict('m'),
  fail.idempotencyConflict('m'),
  fail.serviceUnavailable('m', 1),
  fail.upstreamError('m'),
  fail.internal('m'),
]

describe('the error catalogue', () => {
  test('no file but the catalogue constructs an AppError', () => {
    const constructing = ['src', 'projections']
      .flatMap((dir) => files(join(ROOT, dir)))
      .map((path) => relative(ROOT, path))
      .filter((path) => path !== CATALOGUE_FILE && readFileSync(join(ROOT, path), 'utf8').includes('new AppError('))
    expect(constructing).toEqual([])
  })

  test('one constructor per code, each building the body fields and headers its entry names, no others', () => {
    expect(SAMPLES.map((error) => error.code).sort()).toEqual((Object.keys(ERROR_CATALOGUE) as ErrorCode[]).sort())
    expect(SAMPLES).toHaveLength(Object.keys(fail).length)
    for (const error of SAMPLES) {
      const kind = ERROR_CATALOGUE[error.code]
      expect(Object.keys(error.body()).sort(), error.code).toEqual(['ok', 'error', 'message', ...Object.keys(kind.fields ?? {})].sort())
      const named = new Set((kind.headers ?? []).map((name) => name.toLowerCase()))
      for (const name of Object.keys(error.headers)) expect(named.has(name.toLowerCase()), `${error.code}: ${name}`).toBe(true)
    }
  })
})
