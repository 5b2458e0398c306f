import { type Assessment, type Finding, isEstimateFinding } from './analysis.ts'
import { ESTIMATE_WORDS } from './estimate-words.ts'
import type { ZoneFacts } from './facts.ts'
import type { BriefingInput, Persona } from './personas/index.ts'
import { int, signedPct, usd, WORDS, type Words } from './words.ts'

/** Points below this size are shown without a favourable/unfavourable tag. */
const NOTABLE_POINTS = 0.05

/** The finding the headline leads with: the asking price against the estimate or the market, else the heaviest signal. */
function leadFinding(a: Assessment): Finding | undefined {
  const asking = a.findings.find((f) => f.kind === 'asking_vs_estimate') ?? a.findings.find((f) => f.kind === 'asking_price')
  if (asking) return asking
  const weighed = a.findings.filter((f): f is Finding & { points: number } => 'points' in f && Math.abs(f.points) >= NOTABLE_POINTS)
  const heaviest = weighed.sort((x, y) => Math.abs(y.points) - Math.abs(x.points))[0]
  return heaviest ?? a.findings.find((f) => f.kind === 'missing' && f.figure === 'gross_yield') ?? a.findings.find((f) => f.kind === 'price_vs_country')
}

const cell = (w: Words, value: number | null, format: (w: Words, v: number) => string) =>
  value === null ? w.notAvailable : format(w, value)

function figuresTable(w: Words, facts: ZoneFacts, countryName: string): string {
  const { zone, country } = facts
  const rows: [string, string, string][] = [
    [w.rows.ppm2, cell(w, zone.median_ppm2_usd, usd), cell(w, country.median_ppm2_usd, usd)],
    [w.rows.price, cell(w, zone.median_price_usd, usd), cell(w, country.median_price_usd, usd)],
    [w.rows.change, cell(w, zone.change_30d.pct, signedPct), cell(w, country.change_30d_pct, signedPct)],
    [w.rows.dom, cell(w, zone.median_dom, int), cell(w, country.median_dom, int)],
    [w.rows.active, int(w, zone.n_active), int(w, country.n_active)],
  ]
  return [`| ${w.figure} | ${zone.zone} | ${countryName} |`, '|---|---:|---:|', ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n')
}

function sourceMix(w: Words, facts: ZoneFacts): string {
  return facts.zone.source_mix
    .filter((s) => s.n > 0)
    .map((s) => `${w.sources[s.source] ?? s.source} ${int(w, s.share * 100)}%`)
    .join(', ')
}

/** The local analyst's words: a headline and a Markdown body citing every figure the verdict used. */
export function renderBriefing(
  persona: Persona,
  input: BriefingInput,
  facts: ZoneFacts,
  a: Assessment,
): { headline: string; body_md: string } {
  const w = WORDS[input.language]
  const ew = ESTIMATE_WORDS[input.language]
  const text = persona.text[input.language]
  const countryName = w.countries[facts.country.country]
  const place = `${facts.zone.zone}, ${countryName}`
  const lead = leadFinding(a)
  const leadText = !lead ? '' : isEstimateFinding(lead) ? ew.lead(lead) : w.lead(lead)
  const sentence = (f: Finding) => (isEstimateFinding(f) ? ew.sentence(f, facts.zone.zone) : w.sentence(f, facts.zone.zone, countryName))
  const headline = `${place}: ${a.verdict} (${text.verdicts[a.verdict]})${leadText ? ` — ${leadText}` : ` — ${w.listings(facts.zone.n_active)}`}`

  const tag = (f: Finding) => {
    if (!('points' in f) || Math.abs(f.points) < NOTABLE_POINTS) return ''
    return ` _(${f.points > 0 ? w.favourable : w.unfavourable})_`
  }
  const date = facts.zone.updated_at ? facts.zone.updated_at.slice(0, 10) : w.notAvailable
  const body = [
    `### ${place} · ${text.title}`,
    '',
    `**${w.verdict}:** \`${a.verdict}\` — ${text.verdicts[a.verdict]} · **${w.confidence}:** ${w.confidenceLevels[a.confidence]} (${w.sampleNote(a.sample)})`,
    '',
    `${w.profile}: ${text.profiles[input.profile]}`,
    '',
    `#### ${w.figuresUsed}`,
    '',
    figuresTable(w, facts, countryName),
    '',
    ...(facts.estimate ? ew.section(facts.estimate, facts.zone.zone) : []),
    `#### ${w.analysis}`,
    '',
    ...a.findings.map((f) => `- ${sentence(f)}${tag(f)}`),
    '',
    `#### ${w.recommendation}`,
    '',
    text.advice[a.verdict],
    '',
    text.profileAdvice[input.profile],
    '',
    '---',
    '',
    `_${w.footer(facts.zone.n_active, facts.zone.zone, sourceMix(w, facts), date)}_`,
    '',
  ]
  return { headline, body_md: body.join('\n') }
}
