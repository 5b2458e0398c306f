import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { aLine } from './market.ts'

/**
 * A feed of 1,210 lines, longer than the CLI's batch of 500 lines: good lines, a blank line (700),
 * and bad lines at 501 (first of the second batch), 1,002 and 1,210 (the last), whose reasons read
 * the same under every runtime (no JSON parser's message).
 */
export const LONG_FEED = {
  lines: 1210,
  /** What `ingest` prints on stderr for the bad lines, in order, exactly. */
  rejections: [
    'line 501: must be a JSON object',
    'line 1002: currency: HNL is not used in GT (use GTQ or USD)',
    'line 1210: bedroom: is not a feed field',
  ],
  summary: { read: 1209, new: 1206, changed: 0, unchanged: 0, rejected: 3 },
}

/** Writes LONG_FEED as `dir/long-feed.ndjson` and returns its path. */
export function writeLongFeed(dir: string): string {
  const line = (n: number): string => {
    if (n === 501) return '[501]'
    if (n === 700) return ''
    if (n === 1002) return JSON.stringify(aLine({ source_id: `long-${n}`, currency: 'HNL' }))
    if (n === 1210) return JSON.stringify(aLine({ source_id: `long-${n}`, bedroom: 2 } as never))
    return JSON.stringify(aLine({ source_id: `long-${n}` }))
  }
  const path = join(dir, 'long-feed.ndjson')
  writeFileSync(path, `${Array.from({ length: LONG_FEED.lines }, (_, i) => line(i + 1)).join('\n')}\n`)
  return path
}

/** The stderr lines of an `ingest` run that report bad lines (`line N: …`). */
export const rejectionLines = (stderr: string): string[] => stderr.split('\n').filter((l) => /^line \d+: /.test(l))
