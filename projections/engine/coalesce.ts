export type CoalesceOptions = {
  /** Where failures of runs nobody awaits are reported. */
  onError: (error: unknown) => void
  /** After a failed run, the next one comes this long later, doubling with each failure in a row. Without it, nothing is retried. */
  retryMs?: number
  /** The longest pause between two retries (default 10 s). */
  maxRetryMs?: number
  /** Pause before a further run asked for while one ran, given how long that one took (default none). */
  pause?: (lastRunMs: number) => number
}

/**
 * One task run one at a time. Asking while it runs makes exactly one more run after it, however
 * many ask: the runs coalesce. A failed run ends the round (its callers see the error), is
 * reported, and, with `retryMs`, is tried again with back-off until one succeeds.
 */
export class Coalesced {
  private round: Promise<void> | null = null
  private again = false
  private failures = 0
  private retry: ReturnType<typeof setTimeout> | undefined
  private stopped = false

  constructor(
    private readonly task: () => Promise<void>,
    private readonly options: CoalesceOptions,
  ) {}

  /** Asks for a run; settles when a run that started after this call has ended (rejects when it failed). */
  request(): Promise<void> {
    if (this.stopped) return Promise.resolve()
    if (this.round) {
      this.again = true
      return this.round
    }
    this.round = this.runRound()
    return this.round
  }

  /** Asks for a run without waiting for it; a failure goes to `onError` (and is retried). */
  kick(): void {
    void this.request().catch(() => {})
  }

  /** Settles when no run is under way (a retry may still be scheduled). */
  async settled(): Promise<void> {
    while (this.round) await this.round.catch(() => {})
  }

  get running(): boolean {
    return this.round !== null
  }

  stop(): void {
    this.stopped = true
    clearTimeout(this.retry)
  }

  /** Runs until nobody asked again; the round ends (`round` null) in the same turn as that decision. */
  private async runRound(): Promise<void> {
    try {
      for (;;) {
        this.again = false
        const started = Date.now()
        await this.task()
        this.failures = 0
        if (!this.again || this.stopped) break
        const pause = this.options.pause?.(Date.now() - started) ?? 0
        if (pause > 0) await new Promise((resolve) => setTimeout(resolve, pause))
      }
      this.round = null
    } catch (error) {
      this.round = null
      this.failed(error)
      throw error
    }
  }

  private failed(error: unknown): void {
    this.options.onError(error)
    if (this.options.retryMs === undefined || this.stopped) return
    const delay = Math.min(this.options.maxRetryMs ?? 10_000, this.options.retryMs * 2 ** this.failures)
    this.failures += 1
    clearTimeout(this.retry)
    this.retry = setTimeout(() => this.kick(), delay)
    this.retry.unref?.()
  }
}
