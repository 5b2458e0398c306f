import { createHash, hash } from 'node:crypto'
import { base62Fixed, base62Value } from '../../shared/base62.ts'
import { crc32 } from '../../shared/crc32.ts'

/**
 * API key text: `mrd_` + 32 random base62 + 6 base62 of the CRC-32 of the first 36 characters.
 * The checksum lets malformed or mistyped keys be refused without any lookup.
 */
const PREFIX = 'mrd_'
const KEY_PATTERN = /^mrd_[0-9A-Za-z]{38}$/

export function formatApiKey(randomPart: string): string {
  if (!/^[0-9A-Za-z]{32}$/.test(randomPart)) throw new Error('the random part must be 32 base62 characters')
  const body = PREFIX + randomPart
  return body + base62Fixed(crc32(body), 6)
}

/** True when `text` has the key format and a matching checksum. */
export function isWellFormedApiKey(text: string): boolean {
  if (!KEY_PATTERN.test(text)) return false
  // Compared as numbers: checked on every request, it builds no strings.
  return crc32(text, 36) === base62Value(text.slice(36))
}

/** SHA-256 hex: the only form in which a key is ever stored. One-shot `hash` where the runtime has it (faster, per request). */
export const hashApiKey: (key: string) => string =
  typeof hash === 'function' ? (key) => hash('sha256', key, 'hex') : (key) => createHash('sha256').update(key).digest('hex')

/** What a person may see to recognise a key: `mrd_ab12…9xYz`. */
export const keyHint = (key: string): string => `${key.slice(0, 8)}…${key.slice(-4)}`

export const newKeyId = (randomPart12: string): string => `key_${randomPart12}`
