import { describe, expect, it } from 'vitest'
import { requestIdSource } from '../../src/shared/request-ids.ts'

describe('request ids', () => {
  it('are shaped like a UUID, never repeat within a process, and differ between processes', () => {
    const [a, b] = [requestIdSource(), requestIdSource()]
    const ids = Array.from({ length: 10_000 }, () => a())
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
    expect(new Set(ids).size).toBe(ids.length)
    const other = b()
    expect(ids).not.toContain(other)
  })
})
