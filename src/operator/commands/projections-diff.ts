import { storeCommand } from '../command.ts'
import { type AnyProjectionDiff, diffProjection } from '../projection-diff.ts'
import { pairs, text } from '../text.ts'
import { projectionName } from './params.ts'

/** Lines of changes shown per kind; `--json` lists them all. */
const MAX_LINES = 40

function diffText(d: AnyProjectionDiff): string {
  const lines: string[] = []
  if (d.zones) {
    for (const c of d.zones.changes.slice(0, MAX_LINES)) lines.push(`  ${c.country} ${c.zone} ${c.field}: ${text(c.live)} → ${text(c.held)}`)
    if (d.zones.figures_changed > MAX_LINES) lines.push(`  … and ${d.zones.figures_changed - MAX_LINES} more figures (--json lists them)`)
  }
  if (d.listings) {
    for (const c of d.listings.changes.slice(0, MAX_LINES)) {
      const fields = Object.entries(c.fields).map(([f, v]) => `${f} ${text(v.live)} → ${text(v.held)}`)
      lines.push(`  listing ${c.listing_id} ${c.change}${c.change === 'changed' ? `: ${fields.join(', ')}` : ''}`)
    }
    if (d.listings.changed > MAX_LINES) lines.push(`  … and ${d.listings.changed - MAX_LINES} more listings (--json lists them)`)
  }
  for (const t of d.tables ?? []) {
    for (const c of t.changes.slice(0, MAX_LINES)) {
      lines.push(`  ${t.table} ${pairs(c.key)}: ${c.live ? 'changed' : 'added'}${c.held ? '' : ' (removed)'} ${text(c.live)} → ${text(c.held)}`)
    }
    if (t.changed > MAX_LINES) lines.push(`  … and ${t.changed - MAX_LINES} more rows of ${t.table} (--json lists them)`)
  }
  return [...lines, d.summary].join('\n')
}

export const projectionsDiff = storeCommand({
  name: 'projections diff',
  summary: 'compare the held generation with the live one, as the API would answer',
  params: { name: projectionName },
  run: (ctx, a) =>
    diffProjection(ctx.db, ctx.runner.projection(a.name), ctx.clock(), (done, total) => ctx.progress({ label: `diff ${a.name}`, done, total, unit: 'steps' })),
  output: diffText,
})
