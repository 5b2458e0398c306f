/**
 * The tables of bench/estimate.ts: per country and operation (and overall), how often no estimate is
 * given, the median absolute percentage error, and the share of actual prices inside [low, high],
 * overall and per confidence word; then per confidence word and per level over the whole market.
 */
import { CONFIDENCES, type Estimates, medianError, type Tallies, type Tally } from './estimate-holdout.ts'

const count = (n: number) => n.toLocaleString('en-US')
const percent = (fraction: number | null) => (fraction === null ? '–' : `${(fraction * 100).toFixed(1)} %`)
const share = (part: number, whole: number) => (whole === 0 ? '–' : percent(part / whole))
/** "48.1 % of 1,204": the share inside [low, high] and the number of estimates it is over. */
const insideOf = (e: Estimates) => (e.n === 0 ? '– of 0' : `${share(e.inside, e.n)} of ${count(e.n)}`)

function marketRow(country: string, operation: string, t: Tally): string {
  const words = CONFIDENCES.map((c) => insideOf(t.byConfidence.get(c)!))
  const cells = [country, operation, count(t.heldOut), `${share(t.notEstimated, t.heldOut)} (${count(t.notEstimated)})`, percent(medianError(t.all.errors)), insideOf(t.all), ...words]
  return `| ${cells.join(' | ')} |`
}

/** Per country and operation, then all of them. */
export function marketTable(tallies: Tallies): string {
  const rows = [...tallies.byMarket].filter(([, t]) => t.heldOut > 0).map(([key, t]) => marketRow(...(key.split(' ') as [string, string]), t))
  return [
    '| country | operation | held out | no estimate | median error | inside [low, high] | inside, high | inside, medium | inside, low |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows,
    marketRow('**all**', '', tallies.overall),
  ].join('\n')
}

/** Over the whole market: per confidence word and per level, the estimates, their median error and the share inside [low, high]. */
export function confidenceTable(t: Tally): string {
  const row = (name: string, e: Estimates) => `| ${name} | ${count(e.n)} | ${share(e.n, t.all.n)} | ${percent(medianError(e.errors))} | ${share(e.inside, e.n)} |`
  return [
    '| estimates | n | of all estimates | median error | inside [low, high] |',
    '|---|---|---|---|---|',
    ...CONFIDENCES.map((c) => row(`confidence ${c}`, t.byConfidence.get(c)!)),
    ...[...t.byLevel].map(([level, e]) => row(`level ${level}`, e)),
    row('**all**', t.all),
  ].join('\n')
}

/**
 * Whether the confidence words mean what the docs say: the share inside [low, high] rising from
 * low to medium to high (a word with no estimates says nothing), in one sentence.
 */
/** What docs/statistics.md claims of the range and the words, which every run checks. */
export const CLAIMED_MIN_INSIDE = 0.65

export function confidenceVerdict(t: Tally): string {
  const words = CONFIDENCES.map((c) => t.byConfidence.get(c)!)
  const [high, medium, low] = words as [Estimates, Estimates, Estimates]
  const figures = (what: string, of: (e: Estimates) => string) => `${what}: ${CONFIDENCES.map((c, i) => `${c} ${of(words[i]!)}`).join(', ')}`
  const shares = `${figures('inside [low, high]', (e) => share(e.inside, e.n))} (${figures('median error', (e) => percent(medianError(e.errors)))})`
  if (words.some((e) => e.n === 0)) return `${shares}: a word without estimates, no verdict.`
  const covered = words.every((e) => e.inside / e.n >= CLAIMED_MIN_INSIDE)
  const error = (e: Estimates) => medianError(e.errors) ?? Number.POSITIVE_INFINITY
  const ranked = error(high) <= error(medium) && error(medium) <= error(low)
  const claims = `the docs claim at least ${percent(CLAIMED_MIN_INSIDE)} inside at every word, and a median error growing from high to low`
  return covered && ranked ? `${shares}: as ${claims}.` : `${shares}: **not** as ${claims}${covered ? '' : ' (a word holds fewer inside)'}${ranked ? '' : ' (the errors do not grow)'}.`
}
