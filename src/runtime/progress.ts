/** A long operation's progress; `unit` (e.g. `events`) makes the terminal bar show a rate and an ETA. */
export type Progress = (update: { label: string; done: number; total: number; unit?: string }) => void

const seconds = (s: number) => (s >= 3600 ? `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min` : s >= 60 ? `${Math.floor(s / 60)} min ${Math.round(s % 60)} s` : `${Math.ceil(s)} s`)

/**
 * A progress bar on a terminal (stderr), nothing when output is piped (the command's summary line
 * says what was done). Updates that name a `unit` also show the rate since the label's first
 * update and the time left at that rate. Returns the callback and a finisher.
 */
export function terminalProgress(stream: NodeJS.WriteStream = process.stderr, clock: () => number = () => performance.now()): {
  progress: Progress
  clear(): void
  done(): void
} {
  let drawn = false
  let start: { label: string; at: number; done: number } | null = null
  const progress: Progress = ({ label, done, total, unit }) => {
    if (!stream.isTTY) return
    const now = clock()
    if (start?.label !== label) start = { label, at: now, done }
    const ratio = total > 0 ? Math.min(1, done / total) : 1
    const width = 30
    const filled = Math.round(ratio * width)
    let rate = ''
    const elapsed = (now - start.at) / 1000
    if (unit && elapsed >= 0.5 && done > start.done) {
      const perSecond = (done - start.done) / elapsed
      rate = ` ${Math.round(perSecond).toLocaleString('en-US')} ${unit}/s${done < total ? `, ETA ${seconds((total - done) / perSecond)}` : ''}`
    }
    stream.write(`\r${label} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${(ratio * 100).toFixed(0).padStart(3)}% ${done}/${total}${rate}\x1b[K`)
    drawn = true
  }
  return {
    progress,
    /** Erases the bar so that a message can be printed; the next update draws it again. */
    clear() {
      if (drawn) stream.write('\r\x1b[K')
      drawn = false
    },
    done() {
      if (drawn) stream.write('\n')
      drawn = false
      start = null
    },
  }
}
