import type { RecordedEvent } from '../../src/eventstore/port.ts'
import { AppError, fail } from '../../src/shared/errors.ts'
import { Coalesced } from './coalesce.ts'
import { generationTables } from './generations.ts'
import type { LiveGeneration, LiveTables } from './live-tables.ts'
import type { Projection } from './projection.ts'

/** Tells of every batch the live generation of a projection now holds (ProjectionRunner.onLiveAdvanced). */
export type LiveAdvancing = {
  onLiveAdvanced(listener: (projection: string, events: readonly RecordedEvent[]) => void): () => void
}

/** What an in-memory copy of a read model does; `followLive` does the rest. */
export type FollowSpec<S> = {
  /** The read model followed; its live generation is what the state is always of. */
  projection: Projection
  /** What requests waiting for the state are told when it cannot be had: `zone statistics`. */
  what: string
  /** The whole state of a generation, read from its tables. */
  load(generation: LiveGeneration): Promise<S>
  /**
   * The state brought up to date with events the generation now holds (the same object, changed, or
   * a new one). Without it, every batch loads the generation whole again. `take(through)` hands over
   * the events told of since the pass began up to the position `through` (then the pass's too; later
   * ones stay queued): a state that says at which position it is exact calls it with its snapshot's
   * checkpoint, so that every event that snapshot holds and was told of is known.
   */
  advance?(state: S, events: readonly RecordedEvent[], generation: LiveGeneration, take: (through: number) => readonly RecordedEvent[]): Promise<S>
  /** Pause before a pass asked for while the previous one ran, given how long that took. */
  pause?: (lastPassMs: number) => number
}

export type Follower<S> = {
  /**
   * The state of the live generation: at once, or a promise while another generation (or the first)
   * is loading, so that no answer comes from a generation that is no longer live. Rejects with
   * `service_unavailable` when that load failed, and at once from then on until a retry succeeds.
   */
  current(): S | Promise<S>
  /** Whether `current()` answers at once with the live generation's state (loaded, no switch or failure pending). */
  ready(): boolean
  /** The state last loaded, without waiting: during a switch, still the previous generation's (undefined before the first load). */
  latest(): S | undefined
  /** The generation the state is of (null before the first load). */
  readonly generation: LiveGeneration | null
  /** Resolves when the first load has succeeded (after any failed tries); never rejects. */
  readonly firstLoaded: Promise<void>
  /** Settles when every notice received so far is reflected in the state (or failed, to be retried). */
  settled(): Promise<void>
  stop(): void
}

/** After a failed pass the next comes this long later, doubling up to 10 s. */
const RETRY_MS = 1000

type Deferred = { promise: Promise<void>; resolve(): void; reject(error: unknown): void }
function deferred(): Deferred {
  let resolve!: () => void
  let reject!: (error: unknown) => void
  const promise = new Promise<void>((ok, fail) => {
    resolve = ok
    reject = fail
  })
  // Nobody may be waiting when it fails: that must not count as unhandled.
  promise.catch(() => {})
  return { promise, resolve, reject }
}

/** The state of `target` read whole from its tables; the first is whichever generation is live now. */
async function loadWhole<S>(live: LiveTables, spec: FollowSpec<S>, target: LiveGeneration | 'first'): Promise<{ generation: LiveGeneration; value: S }> {
  const generation = target === 'first' ? await live.of(spec.projection) : target
  return { generation, value: await spec.load(generation) }
}

/**
 * Tells `on` of each batch the live generation of `projection` now holds (`advanced`) and of each
 * generation that becomes live (`switched`); returns how to stop listening.
 */
function watchLive(
  sources: { live: LiveTables; advancing: LiveAdvancing },
  projection: Projection,
  on: { advanced(events: readonly RecordedEvent[]): void; switched(generation: LiveGeneration): void },
): () => void {
  const stops = [
    sources.advancing.onLiveAdvanced((name, events) => {
      if (name === projection.name) on.advanced(events)
    }),
    sources.live.onChange((name, generation) => {
      // A switch names the generation only: its tables follow from the projection.
      if (name === projection.name) on.switched({ ...generation, tables: generationTables(projection, generation) })
    }),
  ]
  return () => {
    for (const stop of stops.splice(0)) stop()
  }
}

/** The events told of and not applied yet: a pass takes them all, then those told of since up to its snapshot's position. */
class Told {
  private waiting: RecordedEvent[] = []
  private taken: RecordedEvent[] = []

  get empty(): boolean {
    return this.waiting.length === 0
  }

  push(events: readonly RecordedEvent[]): void {
    this.waiting.push(...events)
  }

  clear(): void {
    this.waiting = []
  }

  /** Begins a pass: every event told of so far. */
  take(): RecordedEvent[] {
    this.taken = this.waiting
    this.waiting = []
    return this.taken
  }

  /** The events told of since the pass began, up to `position` (later ones stay); taken by the pass too. */
  readonly takeThrough = (position: number): RecordedEvent[] => {
    const more = this.waiting.filter((event) => event.position <= position)
    this.waiting = this.waiting.filter((event) => event.position > position)
    this.taken = [...this.taken, ...more]
    return more
  }

  /** A failed pass: what it took is told of again, first. */
  giveBack(): void {
    this.waiting = [...this.taken, ...this.waiting]
    this.taken = []
  }
}

/**
 * The one follow loop: keeps an in-memory state of a read model's live generation current.
 *
 * - Events of each batch the live generation settles (applied by this process or another) are
 *   queued; one pass at a time applies everything queued (`advance`), so notices arriving during a
 *   pass coalesce into the next one.
 * - A promotion or rollback (a new live generation) loads that generation whole and swaps it in at
 *   once; requests meanwhile wait for it.
 * - A failed pass keeps what it had not applied and is retried with back-off (1 s doubling to 10 s),
 *   reported to `onError`. A failed load makes requests answer `service_unavailable` at once, not
 *   wait through the back-off, until a load succeeds: the state it has, if any, is of a generation
 *   that is no longer live.
 *
 * The first load starts at once; `await follower.settled()` waits for it.
 */
export function followLive<S>(
  sources: { live: LiveTables; advancing: LiveAdvancing },
  spec: FollowSpec<S>,
  onError: (error: unknown) => void,
): Follower<S> {
  let state: { generation: LiveGeneration; value: S } | null = null
  const told = new Told()
  /** A generation to load whole: the first, or the one a switch made live. */
  let loading: LiveGeneration | 'first' | null = 'first'
  let waiting: Deferred | null = deferred()
  const first = deferred()
  /** Set while the last load failed: what requests are answered until one succeeds. */
  let failed: AppError | null = null

  async function pass(): Promise<void> {
    if (loading) {
      const target = loading
      told.clear()
      let loaded: { generation: LiveGeneration; value: S }
      try {
        loaded = await loadWhole(sources.live, spec, target)
      } catch (error) {
        failed = fail.serviceUnavailable(`${spec.what} are being loaded; retry in a moment`, 1)
        waiting?.reject(failed)
        waiting = null
        throw error
      }
      // Another switch came meanwhile: that one is loaded next, and requests keep waiting.
      if (loading !== target) return passes.kick()
      loading = null
      failed = null
      state = loaded
      first.resolve()
      waiting?.resolve()
      waiting = null
      return
    }
    if (!state || told.empty) return
    const events = told.take()
    const { generation } = state
    try {
      const value = await spec.advance!(state.value, events, generation, told.takeThrough)
      if (state.generation === generation) state = { generation, value }
    } catch (error) {
      told.giveBack()
      throw error
    }
  }

  const passes = new Coalesced(pass, { onError, retryMs: RETRY_MS, pause: spec.pause })
  const stopWatching = watchLive(sources, spec.projection, {
    advanced(events) {
      if (spec.advance) told.push(events)
      else if (!loading && state) loading = state.generation
      passes.kick()
    },
    switched(generation) {
      loading = generation
      waiting ??= deferred()
      passes.kick()
    },
  })
  passes.kick()

  return {
    current: () => (waiting ? waiting.promise.then(() => state!.value) : failed ? Promise.reject(failed) : state!.value),
    ready: () => waiting === null && failed === null && state !== null,
    latest: () => state?.value,
    get generation() {
      return state?.generation ?? null
    },
    firstLoaded: first.promise,
    settled: () => passes.settled(),
    stop() {
      stopWatching()
      passes.stop()
    },
  }
}

/** A follower of nothing: the state given, at once, for good (a read model built once, by `audit answer`). */
export function fixedState<S>(value: S): Follower<S> {
  return {
    current: () => value,
    ready: () => true,
    latest: () => value,
    generation: null,
    firstLoaded: Promise.resolve(),
    settled: async () => {},
    stop() {},
  }
}
