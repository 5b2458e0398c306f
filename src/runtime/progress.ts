/**
 * A long operation's progress: `done` of `total` `unit`s (`lines`, `events`, `countries`), under a
 * label that stays the same for the whole operation (the rate is measured from its first update).
 * `total` is unknown for a feed read from a pipe: then the count and the rate, without a bar.
 */
export type ProgressUpdate = { label: string; done: number; total?: number; unit: string }
export type Progress = (update: ProgressUpdate) => void

const seconds = (s: number) => (s >= 3600 ? `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min` : s >= 60 ? `${Math.floor(s / 60)} min ${Math.round(s % 60)} s` : `${Math.ceil(s)} s`)

/** The rate since the label's first update and the time left at that rate, once there is something to measure. */
function rateAndTimeLeft(done: number, total: number | undefined, unit: string, since: { at: number; done: number }, now: number): string {
  const elapsed = (now - since.at) / 1000
  if (elapsed < 0.5 || done <= since.done) return ''
  const perSecond = (done - since.done) / elapsed
  return `, ${Math.round(perSecond).toLocaleString('en-US')} ${unit}/s${total !== undefined && done < total ? `, ${seconds((total - done) / perSecond)} left` : ''}`
}

/** `[######........]  20% 200/1000 lines` */
function bar(done: number, total: number, unit: string): string {
  const ratio = total > 0 ? Math.min(1, done / total) : 1
  const width = 30
  const filled = Math.round(ratio * width)
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${(ratio * 100).toFixed(0).padStart(3)}% ${done}/${total} ${unit}`
}

/**
 * A progress bar on a terminal (stderr), nothing when output is piped (the command's summary line
 * says what was done): the share done, `done/total unit`, and, after half a second, the rate since
 * the label's first update and the time left at that rate. Returns the callback and a finisher.
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
    const rate = rateAndTimeLeft(done, total, unit, start, now)
    stream.write(`\r${label} ${total === undefined ? `${done} ${unit}` : bar(done, total, unit)}${rate}\x1b[K`)
    drawn = true
  }
  return {
    progress,
    /** Erases the bar so that a message can be printed; the next update draws it again. */
    clear() {
      if (drawn) stream.write('\r\x1b[K')
      drawn = false
    },
    /** Ends the bar's line (the bar stays in view), e.g. before the summary or on Ctrl-C. */
    done() {
      if (drawn) stream.write('\n')
      drawn = false
      start = null
    },
  }
}
