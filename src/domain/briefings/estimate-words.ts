import { RANGE_PERCENTILES } from '../market/estimate.ts'
import type { EstimateFinding, Language } from './analysis.ts'
import type { BriefingEstimate } from './facts.ts'
import { estimateText } from './text/catalogue.ts'
import { int, pct, side, usd, WORDS, type Words } from './words.ts'

/** The range's percentiles, as the estimate defines them. */
const [LOW, HIGH] = RANGE_PERCENTILES

/**
 * What a briefing says of the estimate it was judged against, per language: the section that names
 * the estimate, its range, its confidence and every comparable listing it rests on (by id, with the
 * figures it was used with), and the sentences of the estimate's findings. The fixed words are in
 * text/<language>.json (`estimate`); the sentences around figures are the templates below.
 */
export type EstimateWords = {
  sentence(finding: EstimateFinding, zone: string): string
  lead(finding: EstimateFinding): string
  /** The Markdown lines of the estimate's section (an estimate there is: `estimate` not null). */
  section(estimate: BriefingEstimate, zone: string): string[]
}

/** An area as written: whole square metres, or up to two decimals. */
const area = (w: Words, value: number) => w.number(value, Number.isInteger(value) ? 0 : Number.isInteger(value * 10) ? 1 : 2)

/** The figures an intro sentence names, formatted. */
type Intro = {
  type: string
  area: string
  beds: string
  operation: string
  zone: string
  price: string
  low: string
  high: string
  ppm2: string
  confidence: string
  used: number
  kept: number
  level: number
  levelText: string
  candidates: number
  segment: string
  version: number
}

type Templates = {
  bedrooms(n: number): string
  intro(i: Intro): string
  /** `where` is the asking price's gap to the estimate, `position` where it stands against the range. */
  asking(f: Extract<EstimateFinding, { kind: 'asking_vs_estimate' }>, position: string, where: string): string
  budget(f: Extract<EstimateFinding, { kind: 'budget_vs_estimate' }>, position: string): string
  none(f: Extract<EstimateFinding, { kind: 'no_estimate' }>, zone: string, segment: string, operation: string): string
  leadAsking(position: string): string
  leadBudget(position: string): string
}

const TEMPLATES: Record<Language, Templates> = {
  en: {
    bedrooms: (n) => `, ${int(WORDS.en, n)} ${n === 1 ? 'bedroom' : 'bedrooms'}`,
    intro: (i) =>
      `Estimate for the property (${i.type}, ${i.area} m²${i.beds}, ${i.operation}) in ${i.zone}: **${i.price}**, range ${i.low} to ${i.high} (${i.ppm2}/m²), confidence ${i.confidence}. ` +
      `It is the median price per m² of the ${i.used} public listings below × ${i.area} m², the range their ${LOW}th and ${HIGH}th percentiles; they are the closest of the ${i.kept} kept at level ${i.level} (${i.levelText}) among ${i.candidates} ${i.segment} ${i.operation} in the zone (method version ${i.version}).`,
    asking: (f, position, where) =>
      `The asking price of ${usd(WORDS.en, f.asking_usd)} is ${position} the estimate's range (${usd(WORDS.en, f.low_usd)} to ${usd(WORDS.en, f.high_usd)}): ${where} the estimate of ${usd(WORDS.en, f.estimate_usd)}.`,
    budget: (f, position) =>
      `Your budget of ${usd(WORDS.en, f.budget_usd)} is ${position} the estimate's range for the home you describe (${usd(WORDS.en, f.low_usd)} to ${usd(WORDS.en, f.high_usd)}; estimate ${usd(WORDS.en, f.estimate_usd)}).`,
    none: (f, zone, segment, operation) =>
      `There is no estimate of this property: ${zone} has ${int(WORDS.en, f.candidates)} public listings of ${segment} ${operation}, fewer than the ${int(WORDS.en, f.min_comparables)} an estimate needs; the zone's medians decide instead.`,
    leadAsking: (position) => `asking price ${position} the estimate's range`,
    leadBudget: (position) => `budget ${position} the estimate's range`,
  },
  es: {
    bedrooms: (n) => `, ${int(WORDS.es, n)} ${n === 1 ? 'habitación' : 'habitaciones'}`,
    intro: (i) =>
      `Estimación para el inmueble (${i.type}, ${i.area} m²${i.beds}, ${i.operation}) en ${i.zone}: **${i.price}**, rango de ${i.low} a ${i.high} (${i.ppm2}/m²), confianza ${i.confidence}. ` +
      `Es la mediana del precio por m² de las ${i.used} propiedades públicas de abajo × ${i.area} m², y el rango, sus percentiles ${LOW} y ${HIGH}; son las más cercanas de las ${i.kept} que retiene el nivel ${i.level} (${i.levelText}) entre ${i.candidates} ${i.segment} ${i.operation} de la zona (método versión ${i.version}).`,
    asking: (f, position, where) =>
      `El precio pedido de ${usd(WORDS.es, f.asking_usd)} está ${position} rango de la estimación (${usd(WORDS.es, f.low_usd)} a ${usd(WORDS.es, f.high_usd)}): ${where} la estimación de ${usd(WORDS.es, f.estimate_usd)}.`,
    budget: (f, position) =>
      `Su presupuesto de ${usd(WORDS.es, f.budget_usd)} está ${position} rango de la estimación para la vivienda que describe (${usd(WORDS.es, f.low_usd)} a ${usd(WORDS.es, f.high_usd)}; estimación ${usd(WORDS.es, f.estimate_usd)}).`,
    none: (f, zone, segment, operation) =>
      `No hay estimación de este inmueble: en ${zone} hay ${int(WORDS.es, f.candidates)} anuncios públicos de ${segment} ${operation}, menos de los ${int(WORDS.es, f.min_comparables)} que necesita una estimación; deciden las medianas de la zona.`,
    leadAsking: (position) => `precio pedido ${position} rango de la estimación`,
    leadBudget: (position) => `presupuesto ${position} rango de la estimación`,
  },
  pt: {
    bedrooms: (n) => `, ${int(WORDS.pt, n)} ${n === 1 ? 'quarto' : 'quartos'}`,
    intro: (i) =>
      `Estimativa para o imóvel (${i.type}, ${i.area} m²${i.beds}, ${i.operation}) em ${i.zone}: **${i.price}**, faixa de ${i.low} a ${i.high} (${i.ppm2}/m²), confiança ${i.confidence}. ` +
      `É a mediana do preço por m² dos ${i.used} imóveis públicos abaixo × ${i.area} m², e a faixa, seus percentis ${LOW} e ${HIGH}; são os mais próximos dos ${i.kept} retidos no nível ${i.level} (${i.levelText}) entre ${i.candidates} ${i.segment} ${i.operation} da zona (método versão ${i.version}).`,
    asking: (f, position, where) =>
      `O preço pedido de ${usd(WORDS.pt, f.asking_usd)} está ${position} faixa da estimativa (${usd(WORDS.pt, f.low_usd)} a ${usd(WORDS.pt, f.high_usd)}): ${where} estimativa de ${usd(WORDS.pt, f.estimate_usd)}.`,
    budget: (f, position) =>
      `O seu orçamento de ${usd(WORDS.pt, f.budget_usd)} está ${position} faixa da estimativa para o imóvel que descreve (${usd(WORDS.pt, f.low_usd)} a ${usd(WORDS.pt, f.high_usd)}; estimativa ${usd(WORDS.pt, f.estimate_usd)}).`,
    none: (f, zone, segment, operation) =>
      `Não há estimativa deste imóvel: em ${zone} há ${int(WORDS.pt, f.candidates)} anúncios públicos de ${segment} ${operation}, menos dos ${int(WORDS.pt, f.min_comparables)} que uma estimativa exige; decidem as medianas da zona.`,
    leadAsking: (position) => `preço pedido ${position} faixa da estimativa`,
    leadBudget: (position) => `orçamento ${position} faixa da estimativa`,
  },
}

/** The asking price's gap to the estimate, in words: "12.5% above", "level with" (the zone sentences' words). */
const GAP: Record<Language, Record<'above' | 'below' | 'level', (p: string) => string>> = {
  en: { above: (p) => `${p} above`, below: (p) => `${p} below`, level: () => 'level with' },
  es: { above: (p) => `${p} por encima de`, below: (p) => `${p} por debajo de`, level: () => 'en línea con' },
  pt: { above: (p) => `${p} acima da`, below: (p) => `${p} abaixo da`, level: () => 'alinhado à' },
}

function wordsOf(language: Language): EstimateWords {
  const w = WORDS[language]
  const text = estimateText(language)
  const t = TEMPLATES[language]
  const segment = (type: string) => w.segment({ kind: 'property_type', value: type })
  return {
    sentence(f, zone) {
      switch (f.kind) {
        case 'asking_vs_estimate':
          return t.asking(f, text.positions[f.position], GAP[language][side(f.pct)](pct(w, f.pct)))
        case 'budget_vs_estimate':
          return t.budget(f, text.positions[f.position])
        case 'no_estimate':
          return t.none(f, zone, segment(f.property_type), text.operations[f.operation])
      }
    },
    lead(f) {
      if (f.kind === 'asking_vs_estimate') return t.leadAsking(text.positions[f.position])
      if (f.kind === 'budget_vs_estimate') return t.leadBudget(text.positions[f.position])
      return ''
    },
    section({ subject, estimate, comparables, method }, zone) {
      if (!estimate || method.level === null) return []
      const intro = t.intro({
        type: text.types[subject.property_type],
        area: area(w, subject.area_m2),
        beds: subject.bedrooms === null ? '' : t.bedrooms(subject.bedrooms),
        operation: text.operations[subject.operation],
        zone,
        price: usd(w, estimate.price_usd),
        low: usd(w, estimate.low_usd),
        high: usd(w, estimate.high_usd),
        ppm2: usd(w, estimate.price_per_m2_usd),
        confidence: w.confidenceLevels[estimate.confidence],
        used: method.used,
        kept: method.kept,
        level: method.level,
        levelText: text.levels[method.level],
        candidates: method.candidates,
        segment: segment(subject.property_type),
        version: method.version,
      })
      const c = text.columns
      const rows = comparables.map(
        (r) => `| \`${r.listing_id}\` | ${area(w, r.area_m2)} | ${int(w, r.bedrooms)} | ${usd(w, r.price_usd)} | ${usd(w, r.price_per_m2_usd)} | ${usd(w, r.adjusted_price_usd)} |`,
      )
      const header = `| ${c.listing} | ${c.area} | ${c.bedrooms} | ${c.price} | ${c.ppm2} | ${c.adjusted} |`
      return [`#### ${text.title}`, '', intro, '', header, '|---|---:|---:|---:|---:|---:|', ...rows, '']
    },
  }
}

export const ESTIMATE_WORDS: Record<Language, EstimateWords> = { en: wordsOf('en'), es: wordsOf('es'), pt: wordsOf('pt') }
