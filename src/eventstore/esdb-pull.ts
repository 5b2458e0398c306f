import type { Readable } from 'node:stream'
import type { AllStreamResolvedEvent } from '@kurrent/kurrentdb-client'

/**
 * Pulls what a subscription stream has buffered, up to a limit at a time. Listeners stay attached
 * for the stream's life, so an error arriving while the handler runs is kept, not thrown away.
 */
export function pull(stream: Readable) {
  let failure: unknown = null
  let ended = false
  let notify: () => void = () => {}
  stream.on('readable', () => notify())
  stream.on('end', () => ((ended = true), notify()))
  stream.on('close', () => ((ended = true), notify()))
  stream.on('error', (error) => ((failure = error), notify()))
  return {
    async next(limit: number): Promise<AllStreamResolvedEvent[] | null> {
      for (;;) {
        const batch: AllStreamResolvedEvent[] = []
        let item: AllStreamResolvedEvent | null
        while (batch.length < limit && (item = stream.read() as AllStreamResolvedEvent | null) !== null) batch.push(item)
        if (batch.length > 0) return batch
        if (failure) throw failure
        if (ended || stream.destroyed) return null
        await new Promise<void>((resolve) => (notify = resolve))
      }
    },
    end() {
      ended = true
      notify()
    },
  }
}
