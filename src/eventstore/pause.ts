/**
 * A live subscription's wait before its next read: `pause(ms)` settles after `ms`, or at once when
 * `wake()` is called (new events, or the subscription stopping).
 */
export function wakeablePause(): { pause(ms: number): Promise<void>; wake(): void } {
  let wake: () => void = () => {}
  return {
    pause: (ms) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms)
        wake = () => {
          clearTimeout(timer)
          resolve()
        }
      }),
    wake: () => wake(),
  }
}
