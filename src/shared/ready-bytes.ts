/** An answer's body as rendered, and the first instant (epoch ms) from which it may be different. */
export type Rendered = { body: unknown; until: number }

/** Every answer's bytes kept by a ReadyBytes (or made once at start-up), until they are dropped. */
const preparedBytes = new WeakSet<Uint8Array>()

/**
 * Marks `bytes` as an answer served many times as they are: the HTTP layer then keeps their ETag and
 * compressed copies beside them (src/http/finish.ts), made once, not per request.
 */
export function prepared(bytes: Uint8Array): Uint8Array {
  preparedBytes.add(bytes)
  return bytes
}

/** Whether `bytes` are a prepared answer (`prepared`), whose ETag and compressed copies may be kept. */
export const isPrepared = (bytes: Uint8Array): boolean => preparedBytes.has(bytes)

/**
 * JSON answers kept as bytes, so that a prepared answer is serialised once, not per request.
 * They are kept per prepared state (an object its owner replaces when the answer would change: a
 * new generation, new figures; or, for a state changed in place, with the `version` it was at) and
 * per key within it, and rendered again once the request time reaches the instant the figures that
 * depend on it (days on market) change. Answers kept for a state go with it: the garbage collector
 * drops them when the state is replaced. A state keeps at most `maxKeys` answers (then it starts
 * over): keys may come from the request.
 */
export class ReadyBytes<State extends object> {
  private readonly byState = new WeakMap<State, Map<string, { bytes: Uint8Array; version: number; since: number; until: number }>>()
  private readonly encoder = new TextEncoder()

  constructor(private readonly maxKeys: number) {}

  /** The bytes of `key`'s answer for `state` (at `version`) at `nowMs`, if kept and still true. */
  kept(state: State, key: string, nowMs: number, version = 0): Uint8Array | undefined {
    const kept = this.byState.get(state)?.get(key)
    // A clock set back renders again too: the figures are known constant only from `since` on.
    return kept && kept.version === version && kept.since <= nowMs && nowMs < kept.until ? kept.bytes : undefined
  }

  /** Serialises `rendered`, the answer of `key` for `state` at `version` rendered at `nowMs`, and keeps it. */
  keep(state: State, key: string, nowMs: number, rendered: Rendered, version = 0): Uint8Array {
    const bytes = prepared(this.encoder.encode(JSON.stringify(rendered.body)))
    let answers = this.byState.get(state)
    if (!answers) this.byState.set(state, (answers = new Map()))
    if (answers.size >= this.maxKeys && !answers.has(key)) answers.clear()
    answers.set(key, { bytes, version, since: nowMs, until: rendered.until })
    return bytes
  }

  /** The kept bytes, else those of `render`'s answer, kept (null: a refusal, nothing to keep). */
  get(state: State, key: string, nowMs: number, render: () => Rendered | null): Uint8Array | null {
    const kept = this.kept(state, key, nowMs)
    if (kept) return kept
    const rendered = render()
    return rendered && this.keep(state, key, nowMs, rendered)
  }
}
