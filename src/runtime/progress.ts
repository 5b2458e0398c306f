import type { Progress } from '../operator/commands.ts'

/** A progress bar on a terminal (stderr), nothing when output is piped. Returns the callback and a finisher. */
export function terminalProgress(stream: NodeJS.WriteStream = process.stderr): { progress: Progress; clear(): void; done(): void } {
  let drawn = false
  const progress: Progress = ({ label, done, total }) => {
    if (!stream.isTTY) return
    const ratio = total > 0 ? Math.min(1, done / total) : 1
    const width = 30
    const filled = Math.round(ratio * width)
    stream.write(`\r${label} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${(ratio * 100).toFixed(0).padStart(3)}% ${done}/${total}\x1b[K`)
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
    },
  }
}
