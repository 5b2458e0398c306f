import { createHash } from 'node:crypto'

/**
 * A UUID derived from `text` (SHA-256, RFC 9562 layout: version 8, variant 10): the same text always
 * gives the same id, so an event decided twice is recorded once (the store recognises a retry by
 * its event id).
 */
export function derivedUuid(text: string): string {
  const hex = createHash('sha256').update(text).digest('hex')
  const variant = ((Number.parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16)
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`
}
