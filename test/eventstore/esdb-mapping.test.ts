import {
  DeadlineExceededError,
  NO_STREAM,
  type RecordedEvent as KurrentRecordedEvent,
  START,
  StreamNotFoundError,
  UnavailableError,
  UnsupportedError,
  WrongExpectedVersionError,
} from '@kurrent/kurrentdb-client'
import { describe, expect, it } from 'vitest'
import { openEsdbEventStore } from '../../src/eventstore/esdb-event-store.ts'
import {
  attemptOf,
  categoryFilter,
  EsdbMappingError,
  fromKurrent,
  importChunks,
  isStreamNotFound,
  isSystemEvent,
  MULTI_STREAM_APPEND_SINCE,
  multiStreamAppendOffered,
  OLDEST_SERVER,
  planWrite,
  positionOf,
  PROPERTY,
  readPositionAfter,
  serverMode,
  streamStateFor,
  toEventData,
  toPortError,
} from '../../src/eventstore/esdb-mapping.ts'
import {
  checkBatch,
  EventStoreUnavailable,
  IdempotencyConflict,
  type NewEvent,
  type RecordedEvent,
  WrongExpectedRevision,
} from '../../src/eventstore/port.ts'
import { isAppError } from '../../src/shared/errors.ts'
import { freePort } from '../support/server.ts'

const position = (commit: bigint, prepare = commit) => ({ commit, prepare })

/** An event as the client hands it over when reading what `toEventData` wrote. */
function asKurrentReturnsIt(
  event: NewEvent,
  stream: string,
  revision: number,
  at: bigint,
  written = toEventData(event),
  viaMultiStreamAppend = true,
): KurrentRecordedEvent {
  const properties = (written.metadata ?? {}) as Record<string, string>
  return {
    streamId: stream,
    id: event.id,
    revision: BigInt(revision),
    type: event.type,
    data: event.data,
    // Multi-stream appends store properties; KurrentDB reports them with its own schema keys.
    metadata: viaMultiStreamAppend ? { ...properties, '$schema.name': event.type, '$schema.format': 'Json' } : properties,
    isJson: true,
    created: new Date('2025-06-01T10:20:30.456Z'),
    position: position(at),
  } as KurrentRecordedEvent
}

const recorded = (stream: string, revision: number, at: number, id = crypto.randomUUID()): RecordedEvent => ({
  id,
  stream,
  revision,
  position: at,
  type: 'Recorded',
  data: {},
  metadata: {},
  recordedAt: '2025-01-01T00:00:00.000Z',
})

describe('positions: the commit position is the port position', () => {
  it('maps a self-committed event (commit = prepare) to its commit position', () => {
    expect(positionOf(position(1_234_567n), 'e')).toBe(1_234_567)
    expect(positionOf(position(BigInt(Number.MAX_SAFE_INTEGER)), 'e')).toBe(Number.MAX_SAFE_INTEGER)
  })

  it('refuses, loudly, an event of an explicit transaction (commit ≠ prepare)', () => {
    expect(() => positionOf(position(2000n, 1500n), 'event x')).toThrow(EsdbMappingError)
    expect(() => positionOf(position(2000n, 1500n), 'event x')).toThrow(/explicit \(legacy TCP\) transaction/)
  })

  it('refuses positions a number cannot hold exactly, and events without a position', () => {
    expect(() => positionOf(position(2n ** 53n), 'e')).toThrow(/beyond what a position can hold/)
    expect(() => positionOf(undefined, 'e')).toThrow(/no \$all position/)
  })

  it('continues a read or subscription after a position, from the start for 0', () => {
    expect(readPositionAfter(0)).toBe(START)
    expect(readPositionAfter(4711)).toEqual(position(4711n))
  })
})

describe('revisions', () => {
  it('appends at the exact state read: no stream, or the last revision', () => {
    expect(streamStateFor(null)).toBe(NO_STREAM)
    expect(streamStateFor(0)).toBe(0n)
    expect(streamStateFor(41)).toBe(41n)
  })

  it('plans a write like the SQL adapter: duplicate, conflict, wrong revision, or append', () => {
    const stream = 'order-1'
    const [a, b, c] = [recorded(stream, 0, 10), recorded(stream, 1, 20), recorded(stream, 2, 35)]
    const write = (ids: string[], expected: 'any' | 'no_stream' | number) => ({
      stream,
      expected,
      events: ids.map((id) => ({ id: id.toUpperCase(), type: 'T', data: {} })),
    })

    expect(planWrite(write([a.id, b.id], 'no_stream'), [a, b, c])).toEqual({
      kind: 'duplicate',
      result: { revision: 1, position: 20, duplicate: true },
    })
    expect(() => planWrite(write([c.id, crypto.randomUUID()], 2), [a, b, c])).toThrow(IdempotencyConflict)
    const stale = (() => {
      try {
        planWrite(write([crypto.randomUUID()], 0), [a, b, c])
      } catch (error) {
        return error
      }
    })()
    expect(stale).toBeInstanceOf(WrongExpectedRevision)
    expect(stale).toMatchObject({ stream, expected: 0, actual: 2 })
    expect(planWrite(write([crypto.randomUUID()], 2), [a, b, c])).toEqual({ kind: 'append', current: 2 })
    expect(planWrite(write([crypto.randomUUID()], 'any'), [])).toEqual({ kind: 'append', current: null })
    expect(() => planWrite(write([crypto.randomUUID()], 'stream_exists' as never), [])).toThrow(WrongExpectedRevision)
  })

  it('refuses a malformed batch before anything is sent', () => {
    const event = (): NewEvent => ({ id: crypto.randomUUID(), type: 'T', data: {} })
    const shared = event()
    expect(() => checkBatch([{ stream: 'a-1', events: [], expected: 'any' }])).toThrow(/at least one event/)
    expect(() =>
      checkBatch([
        { stream: 'a-1', events: [event()], expected: 'any' },
        { stream: 'a-1', events: [event()], expected: 'any' },
      ]),
    ).toThrow(/more than once/)
    expect(() =>
      checkBatch([
        { stream: 'a-1', events: [shared], expected: 'any' },
        { stream: 'a-2', events: [{ ...shared, id: shared.id.toUpperCase() }], expected: 'any' },
      ]),
    ).toThrow(IdempotencyConflict)
    expect(() => checkBatch([{ stream: 'a-1', events: [event(), event()], expected: 'any' }])).not.toThrow()
  })
})

describe('events and metadata', () => {
  it('writes JSON data and carries the metadata as one JSON text property', () => {
    const event: NewEvent = { id: crypto.randomUUID(), type: 'OrderOpened', data: { total: 12.5 }, metadata: { by: 'op', n: [1, null] } }
    expect(toEventData(event)).toEqual({
      id: event.id,
      contentType: 'application/json',
      type: 'OrderOpened',
      data: { total: 12.5 },
      metadata: { [PROPERTY.metadata]: '{"by":"op","n":[1,null]}' },
    })
    expect(toEventData({ ...event, metadata: {} }).metadata).toBeUndefined()
    expect(toEventData({ ...event, metadata: undefined }, { attempt: 'x', recordedAt: '2020-01-01T00:00:00.000Z' }).metadata).toEqual({
      [PROPERTY.attempt]: 'x',
      [PROPERTY.recordedAt]: '2020-01-01T00:00:00.000Z',
    })
    // Every value is a string, as multi-stream appends require.
    for (const value of Object.values(toEventData(event).metadata as object)) expect(typeof value).toBe('string')
  })

  it('reads back what it wrote, by either append path, with the store time to the second', () => {
    const event: NewEvent = { id: crypto.randomUUID(), type: 'OrderOpened', data: { total: 12.5, note: 'ñandú ✓' }, metadata: { by: 'op' } }
    for (const viaMultiStreamAppend of [true, false]) {
      const read = fromKurrent(asKurrentReturnsIt(event, 'order-7', 3, 9000n, toEventData(event, { attempt: 'a1' }), viaMultiStreamAppend))
      expect(read).toEqual({
        id: event.id,
        stream: 'order-7',
        revision: 3,
        position: 9000,
        type: 'OrderOpened',
        data: event.data,
        metadata: { by: 'op' },
        recordedAt: '2025-06-01T10:20:30.000Z',
      })
    }
    const plain = fromKurrent(asKurrentReturnsIt({ ...event, metadata: undefined }, 'order-7', 0, 10n))
    expect(plain.metadata).toEqual({})
  })

  it('keeps an imported event recording time exactly', () => {
    const event: NewEvent = { id: crypto.randomUUID(), type: 'T', data: {} }
    const written = toEventData(event, { recordedAt: '2019-12-31T23:59:59.123Z' })
    expect(fromKurrent(asKurrentReturnsIt(event, 'x-1', 0, 10n, written)).recordedAt).toBe('2019-12-31T23:59:59.123Z')
  })

  it('tells the attempt that wrote an event', () => {
    const event: NewEvent = { id: crypto.randomUUID(), type: 'T', data: {} }
    expect(attemptOf(asKurrentReturnsIt(event, 'x-1', 0, 10n, toEventData(event, { attempt: 'mine' })))).toBe('mine')
    expect(attemptOf(asKurrentReturnsIt(event, 'x-1', 0, 10n))).toBeUndefined()
  })

  it('refuses events that are not JSON objects or whose metadata is damaged', () => {
    const event: NewEvent = { id: crypto.randomUUID(), type: 'T', data: {} }
    expect(() => fromKurrent({ ...asKurrentReturnsIt(event, 'x-1', 0, 10n), isJson: false, data: new Uint8Array([1]) } as never)).toThrow(
      /does not hold a JSON object/,
    )
    expect(() => fromKurrent({ ...asKurrentReturnsIt(event, 'x-1', 0, 10n), data: [1, 2] } as never)).toThrow(EsdbMappingError)
    const damaged = { ...asKurrentReturnsIt(event, 'x-1', 0, 10n), metadata: { [PROPERTY.metadata]: '[1' } }
    expect(() => fromKurrent(damaged as never)).toThrow(/not a JSON object/)
  })

  it("skips KurrentDB's own events: streams and event types starting with $", () => {
    expect(isSystemEvent({ streamId: '$settings', type: 'update' })).toBe(true)
    expect(isSystemEvent({ streamId: '$ce-owner', type: '$>' })).toBe(true)
    expect(isSystemEvent({ streamId: 'owner-acme', type: '$metadata' })).toBe(true)
    expect(isSystemEvent({ streamId: 'owner-acme', type: 'OwnerRegistered' })).toBe(false)
  })
})

describe('categories', () => {
  it('become stream-name prefixes, then exactly the categories', () => {
    const filter = categoryFilter(['x', 'z'])
    expect(filter.prefixes).toEqual(['x', 'z'])
    expect(['x-1', 'x', 'x-a-b', 'xmore-1', 'z-2', 'y-1'].filter(filter.matches)).toEqual(['x-1', 'x', 'x-a-b', 'z-2'])
    expect(categoryFilter(undefined)).toMatchObject({ prefixes: null })
    expect(categoryFilter(undefined).matches('anything-1')).toBe(true)
  })
})

describe('import chunks', () => {
  it('keep the global order, each stream at most once per atomic append', () => {
    const [a0, b0, a1, a2, c0, b1] = [
      recorded('a-1', 0, 1),
      recorded('b-1', 0, 2),
      recorded('a-1', 1, 3),
      recorded('a-1', 2, 4),
      recorded('c-1', 0, 5),
      recorded('b-1', 1, 6),
    ]
    const chunks = importChunks([a0!, b0!, a1!, a2!, c0!, b1!])
    expect(chunks.map((chunk) => chunk.map((r) => [r.stream, r.current, r.events.map((e) => e.position)]))).toEqual([
      [
        ['a-1', null, [1]],
        ['b-1', null, [2]],
      ],
      [
        ['a-1', 0, [3, 4]],
        ['c-1', null, [5]],
        ['b-1', 0, [6]],
      ],
    ])
    expect(chunks.flat().flatMap((r) => r.events)).toEqual([a0, b0, a1, a2, c0, b1])
    expect(importChunks([])).toEqual([])
    // Names that differ only by case are one stream to KurrentDB's multi-stream append.
    expect(importChunks([recorded('apikey-key_Ab', 0, 1), recorded('apikey-key_aB', 0, 2)])).toHaveLength(2)
  })
})

describe("the client's errors as the port's", () => {
  it('a WrongExpectedVersionError becomes WrongExpectedRevision with the same stream, expectation and actual state', () => {
    const exact = toPortError(new WrongExpectedVersionError(undefined, { streamName: 'quota-acme-2025-06', expected: 3n, current: 5n }))
    expect(exact).toBeInstanceOf(WrongExpectedRevision)
    expect(exact).toMatchObject({ stream: 'quota-acme-2025-06', expected: 3, actual: 5 })
    expect(toPortError(new WrongExpectedVersionError(undefined, { streamName: 's-1', expected: 'stream_exists', current: 'no_stream' }))).toMatchObject(
      { stream: 's-1', expected: 'stream_exists', actual: 'no_stream' },
    )
    expect(toPortError(new WrongExpectedVersionError(undefined, { streamName: 's-1', expected: 'no_stream', current: 0n }))).toMatchObject({
      expected: 'no_stream',
      actual: 0,
    })
  })

  it('deadline and unavailable errors become a 503 service_unavailable that says a retry is safe', () => {
    for (const error of [new DeadlineExceededError(), new UnavailableError()]) {
      const mapped = toPortError(error)
      expect(mapped).toBeInstanceOf(EventStoreUnavailable)
      expect(isAppError(mapped) && mapped.code).toBe('service_unavailable')
      expect((mapped as EventStoreUnavailable).headers).toEqual({ 'Retry-After': '1' })
      // The client learns the class of the dependency, never the server's address; the log has the reason.
      expect((mapped as Error).message).toBe('the event store is unavailable; retry in a moment')
      expect((mapped as EventStoreUnavailable).reason).toMatch(/KurrentDB/)
    }
  })

  it('raw gRPC errors the client passes on are translated too', () => {
    const refused = Object.assign(new Error('14 UNAVAILABLE: No connection established'), { code: 14, details: 'No connection established' })
    expect(toPortError(refused)).toBeInstanceOf(EventStoreUnavailable)
    const late = Object.assign(new Error('4 DEADLINE_EXCEEDED'), { code: 4, details: 'Deadline exceeded' })
    expect(toPortError(late)).toBeInstanceOf(EventStoreUnavailable)
  })

  it('a missing stream reads as empty; other errors pass unchanged', () => {
    expect(isStreamNotFound(new StreamNotFoundError(undefined, 'owner-nobody'))).toBe(true)
    expect(isStreamNotFound(new UnavailableError())).toBe(false)
    const other = new Error('boom')
    expect(toPortError(other)).toBe(other)
  })

})

describe('the server: version and batches', () => {
  const probe = (error: unknown) => multiStreamAppendOffered(error)

  it('reads the probe: the client\'s UnsupportedError means no multi-stream appends; any answer of the server means them; unreachable is thrown', () => {
    expect(probe(new UnsupportedError('multiStreamAppend', '25.1'))).toBe(false)
    expect(probe(null)).toBe(true)
    // KurrentDB 25.1 refuses an empty multi-stream append: it has them.
    expect(probe(new Error('at least one stream is required'))).toBe(true)
    expect(() => probe(new UnavailableError())).toThrow(EventStoreUnavailable)
  })

  it('starts on EventStoreDB 22.6 to 24.x and KurrentDB 25.0 with batches stream by stream, saying why', () => {
    for (const version of ['24.0.0', '24.10.5', '23.10.1', '22.10.0', '22.6.0', '25.0.1']) {
      const mode = serverMode({ version, multiStreamAppend: false }, false)
      expect(mode).toMatchObject({ version, batches: 'stream-by-stream' })
      expect(mode.reason).toMatch(`before KurrentDB ${MULTI_STREAM_APPEND_SINCE}`)
    }
  })

  it('says so when a KurrentDB of 25.1 or later does not offer multi-stream appends (not that its version is too old)', () => {
    const mode = serverMode({ version: '25.1.0', multiStreamAppend: false }, false)
    expect(mode).toMatchObject({ version: '25.1.0', batches: 'stream-by-stream' })
    expect(mode.reason).toBe('KurrentDB 25.1.0 does not offer multi-stream appends: each stream of a batch is appended on its own')
  })

  it('records batches all or nothing on KurrentDB 25.1 and later, unless single-stream appends are asked for', () => {
    expect(serverMode({ version: '25.1.0', multiStreamAppend: true }, false)).toMatchObject({ batches: 'all-or-nothing', version: '25.1.0' })
    expect(serverMode({ version: '26.1.2', multiStreamAppend: true }, false).batches).toBe('all-or-nothing')
    const forced = serverMode({ version: '25.1.0', multiStreamAppend: true }, true)
    expect(forced.batches).toBe('stream-by-stream')
    expect(forced.reason).toMatch(/SINGLE_STREAM_APPENDS/)
  })

  it('refuses a server older than 22.6, whose stream reads carry no $all position, naming the version needed', () => {
    for (const version of ['20.10.5', '21.10.9', '22.2.0']) {
      expect(() => serverMode({ version, multiStreamAppend: false }, false)).toThrow(EsdbMappingError)
      expect(() => serverMode({ version, multiStreamAppend: false }, false)).toThrow(`EventStoreDB ${OLDEST_SERVER} or later`)
    }
  })

  it('refuses a server that reports no version (EventStoreDB before 21.10), as the README says of servers older than 22.6', () => {
    expect(() => serverMode({ version: 'unknown', multiStreamAppend: false }, false)).toThrow(
      `the server reports no version (EventStoreDB before 21.10 does not): Mirador needs EventStoreDB ${OLDEST_SERVER} or later`,
    )
  })
})

describe('opening the adapter', () => {
  it('refuses to start, with a clear error, when no KurrentDB answers', async () => {
    const port = await freePort()
    const error = await openEsdbEventStore(`kurrentdb://127.0.0.1:${port}?tls=false`).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(EventStoreUnavailable)
    expect((error as EventStoreUnavailable).reason).toMatch(/KurrentDB is unreachable/)
  })
})
