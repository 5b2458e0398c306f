import { JSON_TYPE } from './errors.ts'

/** An answer's body as rendered, and the first instant (epoch ms) from which it may be different. */
export type Rendered = { body: unknown; until: number }

/**
 * JSON answers kept as bytes, so that a prepared answer is serialised once, not per request.
 * They are kept per prepared state (an object its owner replaces, never changes, when the answer
 * would change: a new generation, new figures) and per key within it, and rendered again once the
 * request time reaches the instant the figures that depend on it (days on market) change. Answers
 * kept for a state go with it: the garbage collector drops them when the state is replaced. A
 * state keeps at most `maxKeys` answers (then it starts over): keys may come from the request.
 */
export class ReadyBytes<State extends object> {
  private readonly byState = new WeakMap<State, Map<string, { bytes: Uint8Array; since: number; until: number }>>()
  private readonly encoder = new TextEncoder()

  constructor(private readonly maxKeys: number) {}

  /** The bytes of `key`'s answer for `state` at `nowMs`; `render` gives it (null: nothing to keep, the answer is a refusal). */
  get(state: State, key: string, nowMs: number, render: () => Rendered | null): Uint8Array | null {
    let answers = this.byState.get(state)
    const kept = answers?.get(key)
    // A clock set back renders again too: the figures are known constant only from `since` on.
    if (kept && kept.since <= nowMs && nowMs < kept.until) return kept.bytes
    const rendered = render()
    if (!rendered) return null
    const bytes = this.encoder.encode(JSON.stringify(rendered.body))
    if (!answers) this.byState.set(state, (answers = new Map()))
    if (answers.size >= this.maxKeys && !answers.has(key)) answers.clear()
    answers.set(key, { bytes, since: nowMs, until: rendered.until })
    return bytes
  }
}

/** `bytes` as a route's JSON answer: a route returning bytes says they are JSON (Elysia would not know). */
export function jsonBytes(set: { headers: Record<string, unknown> }, bytes: Uint8Array): Uint8Array {
  set.headers['content-type'] = JSON_TYPE
  return bytes
}
