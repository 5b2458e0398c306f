/** Plain-text building blocks of the commands' outputs. */

type Row = Record<string, unknown>

/** Columns padded to their widest cell; `-` for nothing, lists joined by commas. */
export function table(rows: readonly Row[], columns: readonly string[]): string {
  const cell = (v: unknown) => (v === null || v === undefined ? '-' : Array.isArray(v) ? v.join(',') : String(v))
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)))
  const line = (values: string[]) => values.map((v, i) => v.padEnd(widths[i]!)).join('  ').trimEnd()
  return [line([...columns]), ...rows.map((r) => line(columns.map((c) => cell(r[c]))))].join('\n')
}

/** A value on one line: objects as JSON. */
export const text = (v: unknown) => (typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v))

/** `key=value key=value`. */
export const pairs = (record: Record<string, unknown>) =>
  Object.entries(record)
    .map(([k, v]) => `${k}=${Array.isArray(v) ? v.join(',') || '-' : text(v)}`)
    .join(' ')

/** When a state holds: `as of TIME`, or `now`. */
export const asOf = (until: string | null) => (until ? `as of ${until}` : 'now')
