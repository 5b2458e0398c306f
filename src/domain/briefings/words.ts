import type { Confidence, Language, MissingFigure, Segment, ZoneFinding } from './analysis.ts'
import type { Country } from '../market/vocabulary.ts'
import { missingText } from './text/catalogue.ts'

/**
 * Everything language-specific in a local-analyst briefing. Numbers are formatted here by hand
 * (not Intl) so the text is byte-identical on every runtime: `,` thousands and `.` decimals for
 * es/en (the Central American convention), `.` and `,` for pt.
 */
export type Words = {
  number(value: number, digits: number): string
  countries: Record<Country, string>
  notAvailable: string
  verdict: string
  confidence: string
  confidenceLevels: Record<Confidence, string>
  sampleNote(n: number): string
  profile: string
  figuresUsed: string
  figure: string
  country: string
  rows: { ppm2: string; price: string; change: string; dom: string; active: string }
  analysis: string
  recommendation: string
  favourable: string
  unfavourable: string
  segment(segment: Segment): string
  /** The sentence of a zone finding (an estimate's: estimate-words.ts). */
  sentence(finding: ZoneFinding, zone: string, country: string): string
  lead(finding: ZoneFinding): string
  listings(n: number): string
  sources: Record<string, string>
  footer(n: number, zone: string, mix: string, date: string): string
}

const grouped = (value: number, digits: number, thousands: string, decimal: string) => {
  const fixed = Math.abs(value).toFixed(digits)
  const [whole, fraction] = fixed.split('.')
  const withGroups = whole!.replace(/\B(?=(\d{3})+(?!\d))/g, thousands)
  const sign = value < 0 && Number(fixed) !== 0 ? '-' : ''
  return sign + withGroups + (fraction ? decimal + fraction : '')
}

/** Money: whole dollars from 100 up, cents below (rents per m²). */
export const usd = (w: Words, value: number) => `USD ${w.number(value, Math.abs(value) >= 100 ? 0 : 2)}`
export const signedPct = (w: Words, value: number) => `${value > 0 ? '+' : value < 0 ? '-' : '±'}${w.number(Math.abs(value), 1)}%`
export const pct = (w: Words, value: number) => `${w.number(Math.abs(value), 1)}%`
export const int = (w: Words, value: number) => w.number(value, 0)

/** What a briefing says of a figure it could not compute, per language (text/*.json). */
const missing: Record<Language, Record<MissingFigure, string>> = { en: missingText('en'), es: missingText('es'), pt: missingText('pt') }

type Side = 'above' | 'below' | 'level'
/** Which side of a reference a gap in percent puts a figure: level within ±0.5%. */
export const side = (pctValue: number): Side => (pctValue >= 0.5 ? 'above' : pctValue <= -0.5 ? 'below' : 'level')

const en: Words = {
  number: (v, d) => grouped(v, d, ',', '.'),
  countries: { GT: 'Guatemala', SV: 'El Salvador', HN: 'Honduras', CR: 'Costa Rica', BZ: 'Belize', DO: 'Dominican Republic', PA: 'Panama', BR: 'Brazil' },
  notAvailable: 'n/a',
  verdict: 'Verdict',
  confidence: 'Confidence',
  confidenceLevels: { low: 'low', medium: 'medium', high: 'high' },
  sampleNote: (n) => `${int(en, n)} listings behind the main figure`,
  profile: 'Profile',
  figuresUsed: 'Figures used',
  figure: 'Figure',
  country: 'country',
  rows: {
    ppm2: 'Median sale price per m²',
    price: 'Median sale price',
    change: 'Change in price per m², 30 days',
    dom: 'Median days on market',
    active: 'Active listings',
  },
  analysis: 'Analysis',
  recommendation: 'Recommendation',
  favourable: 'favourable',
  unfavourable: 'unfavourable',
  segment(s) {
    if (s.kind === 'zone') return 'the whole zone'
    if (s.kind === 'bedrooms') return s.value === '0' ? 'studios' : s.value === '1' ? '1-bedroom homes' : `${s.value}-bedroom homes`
    return { Apartamento: 'apartments', Casa: 'houses', Terreno: 'land', Oficina: 'offices', Local: 'retail units', Bodega: 'warehouses' }[s.value] ?? s.value
  },
  sentence(f, zone, country) {
    const w = en
    switch (f.kind) {
      case 'price_vs_country': {
        const where = { above: `${pct(w, f.pct)} above`, below: `${pct(w, f.pct)} below`, level: 'in line with' }[side(f.pct)]
        return `The median sale price per m² in ${zone} (${usd(w, f.zone_ppm2)}) is ${where} the ${country} median (${usd(w, f.country_ppm2)}).`
      }
      case 'momentum':
        return `The median price per m² moved ${signedPct(w, f.pct)} over 30 days${f.ppm2_then !== null && f.ppm2_now !== null ? ` (${usd(w, f.ppm2_then)} → ${usd(w, f.ppm2_now)})` : ''}.`
      case 'days_on_market':
        return `Listings stay a median of ${int(w, f.zone_days)} days on the market, against ${int(w, f.country_days)} days across ${country}.`
      case 'gross_yield':
        return `Gross rental yield is about ${pct(w, f.pct)}: a median rent of ${usd(w, f.rent_ppm2)}/m² a month (${int(w, f.n_rent)} rental listings) against ${usd(w, f.sale_ppm2)}/m² to buy.`
      case 'budget':
        return `Your budget of ${usd(w, f.budget_usd)} is ${pct(w, f.pct)} of the median price of ${w.segment(f.segment)} (${usd(w, f.price_usd)}).`
      case 'asking_price': {
        const where = { above: `${pct(w, f.pct)} above`, below: `${pct(w, f.pct)} below`, level: 'level with' }[side(f.pct)]
        return f.basis === 'ppm2'
          ? `The asking price of ${usd(w, f.asking_usd)} comes to ${usd(w, f.asking_ppm2!)}/m², ${where} the median of ${usd(w, f.market_usd)}/m² for ${w.segment(f.segment)}.`
          : `The asking price of ${usd(w, f.asking_usd)} is ${where} the median price of ${usd(w, f.market_usd)} for ${w.segment(f.segment)}.`
      }
      case 'land_share':
        return `Land sells at a median of ${usd(w, f.land_ppm2)}/m², ${pct(w, f.pct)} of the ${usd(w, f.built_ppm2)}/m² the finished product fetches.`
      case 'lot_size':
        return f.points < 0
          ? `A lot of ${int(w, f.lot_m2)} m² is above the ${int(w, f.comfortable_m2)} m² a zone absorbs at its normal pace; a larger scheme takes longer to sell.`
          : `A lot of ${int(w, f.lot_m2)} m² is within what the zone absorbs at its normal pace.`
      case 'horizon':
        return `Over a ${f.years}-year horizon the 30-day trend counts for ${int(w, f.momentum_weight * 100)}% of its usual weight.`
      case 'segment':
        return `${capitalise(w.segment(f.segment))}: ${int(w, f.n_active)} active listings${f.median_price_usd !== null ? `, median ${usd(w, f.median_price_usd)}` : ''}${f.median_ppm2_usd !== null ? ` (${usd(w, f.median_ppm2_usd)}/m²)` : ''}.`
      case 'missing':
        return missing.en[f.figure]
    }
  },
  lead(f) {
    const w = en
    switch (f.kind) {
      case 'price_vs_country':
        return side(f.pct) === 'level' ? 'priced in line with the country' : `price per m² ${pct(w, f.pct)} ${side(f.pct)} the country median`
      case 'momentum':
        return `prices ${signedPct(w, f.pct)} in 30 days`
      case 'days_on_market':
        return `homes sell in ${int(w, f.zone_days)} days (country: ${int(w, f.country_days)})`
      case 'gross_yield':
        return `gross yield ${pct(w, f.pct)}`
      case 'budget':
        return `budget covers ${pct(w, f.pct)} of the median price`
      case 'asking_price':
        return side(f.pct) === 'level' ? 'asking price level with the market' : `asking price ${pct(w, f.pct)} ${side(f.pct)} the market`
      case 'land_share':
        return `land at ${pct(w, f.pct)} of the built price per m²`
      case 'lot_size':
        return `${int(w, f.lot_m2)} m² lot`
      case 'missing':
        return f.figure === 'gross_yield' ? 'too few rent listings to measure a yield' : 'key figures missing'
      default:
        return ''
    }
  },
  listings: (n) => `${int(en, n)} active listings`,
  sources: { broker: 'broker', scraped: 'portals' },
  footer: (n, zone, mix, date) =>
    `Source: ${int(en, n)} active listings in ${zone}${mix ? ` (${mix})` : ''}, data as of ${date}. Medians over fewer than 3 listings are not reported. Written by Mirador's local analyst from these figures only; not financial advice.`,
}


const es: Words = {
  number: (v, d) => grouped(v, d, ',', '.'),
  countries: { GT: 'Guatemala', SV: 'El Salvador', HN: 'Honduras', CR: 'Costa Rica', BZ: 'Belice', DO: 'República Dominicana', PA: 'Panamá', BR: 'Brasil' },
  notAvailable: 'n/d',
  verdict: 'Veredicto',
  confidence: 'Confianza',
  confidenceLevels: { low: 'baja', medium: 'media', high: 'alta' },
  sampleNote: (n) => `${int(es, n)} propiedades detrás de la cifra principal`,
  profile: 'Perfil',
  figuresUsed: 'Cifras utilizadas',
  figure: 'Cifra',
  country: 'país',
  rows: {
    ppm2: 'Mediana de precio de venta por m²',
    price: 'Mediana de precio de venta',
    change: 'Cambio del precio por m², 30 días',
    dom: 'Mediana de días en el mercado',
    active: 'Propiedades activas',
  },
  analysis: 'Análisis',
  recommendation: 'Recomendación',
  favourable: 'favorable',
  unfavourable: 'desfavorable',
  segment(s) {
    if (s.kind === 'zone') return 'toda la zona'
    if (s.kind === 'bedrooms') return s.value === '0' ? 'estudios' : s.value === '1' ? 'viviendas de 1 habitación' : `viviendas de ${s.value} habitaciones`
    return { Apartamento: 'apartamentos', Casa: 'casas', Terreno: 'terrenos', Oficina: 'oficinas', Local: 'locales comerciales', Bodega: 'bodegas' }[s.value] ?? s.value
  },
  sentence(f, zone, country) {
    const w = es
    switch (f.kind) {
      case 'price_vs_country': {
        const where = { above: `${pct(w, f.pct)} por encima de`, below: `${pct(w, f.pct)} por debajo de`, level: 'en línea con' }[side(f.pct)]
        return `La mediana de precio de venta por m² en ${zone} (${usd(w, f.zone_ppm2)}) está ${where} la mediana de ${country} (${usd(w, f.country_ppm2)}).`
      }
      case 'momentum':
        return `La mediana de precio por m² varió ${signedPct(w, f.pct)} en 30 días${f.ppm2_then !== null && f.ppm2_now !== null ? ` (${usd(w, f.ppm2_then)} → ${usd(w, f.ppm2_now)})` : ''}.`
      case 'days_on_market':
        return `Las propiedades permanecen una mediana de ${int(w, f.zone_days)} días en el mercado, frente a ${int(w, f.country_days)} días en ${country}.`
      case 'gross_yield':
        return `La rentabilidad bruta de alquiler ronda el ${pct(w, f.pct)}: renta mediana de ${usd(w, f.rent_ppm2)}/m² al mes (${int(w, f.n_rent)} propiedades en alquiler) frente a ${usd(w, f.sale_ppm2)}/m² de compra.`
      case 'budget':
        return `Su presupuesto de ${usd(w, f.budget_usd)} equivale al ${pct(w, f.pct)} de la mediana de precio de ${w.segment(f.segment)} (${usd(w, f.price_usd)}).`
      case 'asking_price': {
        const where = { above: `${pct(w, f.pct)} por encima de`, below: `${pct(w, f.pct)} por debajo de`, level: 'en línea con' }[side(f.pct)]
        return f.basis === 'ppm2'
          ? `El precio pedido de ${usd(w, f.asking_usd)} equivale a ${usd(w, f.asking_ppm2!)}/m², ${where} la mediana de ${usd(w, f.market_usd)}/m² de ${w.segment(f.segment)}.`
          : `El precio pedido de ${usd(w, f.asking_usd)} está ${where} la mediana de ${usd(w, f.market_usd)} de ${w.segment(f.segment)}.`
      }
      case 'land_share':
        return `El terreno se vende a una mediana de ${usd(w, f.land_ppm2)}/m², el ${pct(w, f.pct)} de los ${usd(w, f.built_ppm2)}/m² del producto terminado.`
      case 'lot_size':
        return f.points < 0
          ? `Un lote de ${int(w, f.lot_m2)} m² supera los ${int(w, f.comfortable_m2)} m² que una zona absorbe a ritmo normal; un proyecto mayor tarda más en venderse.`
          : `Un lote de ${int(w, f.lot_m2)} m² está dentro de lo que la zona absorbe a ritmo normal.`
      case 'horizon':
        return `Con un horizonte de ${f.years} años, la tendencia de 30 días pesa el ${int(w, f.momentum_weight * 100)}% de lo habitual.`
      case 'segment':
        return `${capitalise(w.segment(f.segment))}: ${int(w, f.n_active)} propiedades activas${f.median_price_usd !== null ? `, mediana ${usd(w, f.median_price_usd)}` : ''}${f.median_ppm2_usd !== null ? ` (${usd(w, f.median_ppm2_usd)}/m²)` : ''}.`
      case 'missing':
        return missing.es[f.figure]
    }
  },
  lead(f) {
    const w = es
    switch (f.kind) {
      case 'price_vs_country':
        return side(f.pct) === 'level'
          ? 'precios en línea con el país'
          : `precio por m² ${pct(w, f.pct)} ${side(f.pct) === 'above' ? 'sobre' : 'bajo'} la mediana del país`
      case 'momentum':
        return `precios ${signedPct(w, f.pct)} en 30 días`
      case 'days_on_market':
        return `se vende en ${int(w, f.zone_days)} días (país: ${int(w, f.country_days)})`
      case 'gross_yield':
        return `rentabilidad bruta ${pct(w, f.pct)}`
      case 'budget':
        return `el presupuesto cubre el ${pct(w, f.pct)} de la mediana`
      case 'asking_price':
        return side(f.pct) === 'level'
          ? 'precio pedido en línea con el mercado'
          : `precio pedido ${pct(w, f.pct)} ${side(f.pct) === 'above' ? 'sobre' : 'bajo'} el mercado`
      case 'land_share':
        return `terreno al ${pct(w, f.pct)} del precio construido por m²`
      case 'lot_size':
        return `lote de ${int(w, f.lot_m2)} m²`
      case 'missing':
        return f.figure === 'gross_yield' ? 'muy pocas rentas para medir la rentabilidad' : 'faltan cifras clave'
      default:
        return ''
    }
  },
  listings: (n) => `${int(es, n)} propiedades activas`,
  sources: { broker: 'corredores', scraped: 'portales' },
  footer: (n, zone, mix, date) =>
    `Fuente: ${int(es, n)} propiedades activas en ${zone}${mix ? ` (${mix})` : ''}, datos al ${date}. No se informan medianas de menos de 3 propiedades. Redactado por el analista local de Mirador solo a partir de estas cifras; no es asesoría financiera.`,
}


const pt: Words = {
  number: (v, d) => grouped(v, d, '.', ','),
  countries: { GT: 'Guatemala', SV: 'El Salvador', HN: 'Honduras', CR: 'Costa Rica', BZ: 'Belize', DO: 'República Dominicana', PA: 'Panamá', BR: 'Brasil' },
  notAvailable: 'n/d',
  verdict: 'Veredito',
  confidence: 'Confiança',
  confidenceLevels: { low: 'baixa', medium: 'média', high: 'alta' },
  sampleNote: (n) => `${int(pt, n)} imóveis por trás do número principal`,
  profile: 'Perfil',
  figuresUsed: 'Números utilizados',
  figure: 'Indicador',
  country: 'país',
  rows: {
    ppm2: 'Preço mediano de venda por m²',
    price: 'Preço mediano de venda',
    change: 'Variação do preço por m², 30 dias',
    dom: 'Mediana de dias no mercado',
    active: 'Imóveis ativos',
  },
  analysis: 'Análise',
  recommendation: 'Recomendação',
  favourable: 'favorável',
  unfavourable: 'desfavorável',
  segment(s) {
    if (s.kind === 'zone') return 'a zona inteira'
    if (s.kind === 'bedrooms') return s.value === '0' ? 'estúdios' : s.value === '1' ? 'imóveis de 1 quarto' : `imóveis de ${s.value} quartos`
    return { Apartamento: 'apartamentos', Casa: 'casas', Terreno: 'terrenos', Oficina: 'escritórios', Local: 'lojas', Bodega: 'galpões' }[s.value] ?? s.value
  },
  sentence(f, zone, country) {
    const w = pt
    switch (f.kind) {
      case 'price_vs_country': {
        const where = { above: `${pct(w, f.pct)} acima da`, below: `${pct(w, f.pct)} abaixo da`, level: 'alinhado à' }[side(f.pct)]
        return `O preço mediano de venda por m² em ${zone} (${usd(w, f.zone_ppm2)}) está ${where} mediana de ${country} (${usd(w, f.country_ppm2)}).`
      }
      case 'momentum':
        return `O preço mediano por m² variou ${signedPct(w, f.pct)} em 30 dias${f.ppm2_then !== null && f.ppm2_now !== null ? ` (${usd(w, f.ppm2_then)} → ${usd(w, f.ppm2_now)})` : ''}.`
      case 'days_on_market':
        return `Os imóveis ficam uma mediana de ${int(w, f.zone_days)} dias no mercado, contra ${int(w, f.country_days)} dias em ${country}.`
      case 'gross_yield':
        return `A rentabilidade bruta de aluguel fica em torno de ${pct(w, f.pct)}: aluguel mediano de ${usd(w, f.rent_ppm2)}/m² por mês (${int(w, f.n_rent)} imóveis para alugar) contra ${usd(w, f.sale_ppm2)}/m² na compra.`
      case 'budget':
        return `O seu orçamento de ${usd(w, f.budget_usd)} equivale a ${pct(w, f.pct)} do preço mediano de ${w.segment(f.segment)} (${usd(w, f.price_usd)}).`
      case 'asking_price': {
        const where = { above: `${pct(w, f.pct)} acima da`, below: `${pct(w, f.pct)} abaixo da`, level: 'alinhado à' }[side(f.pct)]
        return f.basis === 'ppm2'
          ? `O preço pedido de ${usd(w, f.asking_usd)} equivale a ${usd(w, f.asking_ppm2!)}/m², ${where} mediana de ${usd(w, f.market_usd)}/m² de ${w.segment(f.segment)}.`
          : `O preço pedido de ${usd(w, f.asking_usd)} está ${where} mediana de ${usd(w, f.market_usd)} de ${w.segment(f.segment)}.`
      }
      case 'land_share':
        return `O terreno é vendido a uma mediana de ${usd(w, f.land_ppm2)}/m², ${pct(w, f.pct)} dos ${usd(w, f.built_ppm2)}/m² do produto pronto.`
      case 'lot_size':
        return f.points < 0
          ? `Um lote de ${int(w, f.lot_m2)} m² passa dos ${int(w, f.comfortable_m2)} m² que uma zona absorve no ritmo normal; um empreendimento maior demora mais para vender.`
          : `Um lote de ${int(w, f.lot_m2)} m² está dentro do que a zona absorve no ritmo normal.`
      case 'horizon':
        return `Num horizonte de ${f.years} anos, a tendência de 30 dias pesa ${int(w, f.momentum_weight * 100)}% do habitual.`
      case 'segment':
        return `${capitalise(w.segment(f.segment))}: ${int(w, f.n_active)} imóveis ativos${f.median_price_usd !== null ? `, mediana ${usd(w, f.median_price_usd)}` : ''}${f.median_ppm2_usd !== null ? ` (${usd(w, f.median_ppm2_usd)}/m²)` : ''}.`
      case 'missing':
        return missing.pt[f.figure]
    }
  },
  lead(f) {
    const w = pt
    switch (f.kind) {
      case 'price_vs_country':
        return side(f.pct) === 'level'
          ? 'preços alinhados ao país'
          : `preço por m² ${pct(w, f.pct)} ${side(f.pct) === 'above' ? 'acima' : 'abaixo'} da mediana do país`
      case 'momentum':
        return `preços ${signedPct(w, f.pct)} em 30 dias`
      case 'days_on_market':
        return `vende em ${int(w, f.zone_days)} dias (país: ${int(w, f.country_days)})`
      case 'gross_yield':
        return `rentabilidade bruta de ${pct(w, f.pct)}`
      case 'budget':
        return `o orçamento cobre ${pct(w, f.pct)} da mediana`
      case 'asking_price':
        return side(f.pct) === 'level'
          ? 'preço pedido alinhado ao mercado'
          : `preço pedido ${pct(w, f.pct)} ${side(f.pct) === 'above' ? 'acima' : 'abaixo'} do mercado`
      case 'land_share':
        return `terreno a ${pct(w, f.pct)} do preço construído por m²`
      case 'lot_size':
        return `lote de ${int(w, f.lot_m2)} m²`
      case 'missing':
        return f.figure === 'gross_yield' ? 'poucos aluguéis para medir a rentabilidade' : 'faltam números-chave'
      default:
        return ''
    }
  },
  listings: (n) => `${int(pt, n)} imóveis ativos`,
  sources: { broker: 'corretores', scraped: 'portais' },
  footer: (n, zone, mix, date) =>
    `Fonte: ${int(pt, n)} imóveis ativos em ${zone}${mix ? ` (${mix})` : ''}, dados de ${date}. Medianas de menos de 3 imóveis não são informadas. Redigido pelo analista local do Mirador apenas a partir destes números; não é recomendação financeira.`,
}


const capitalise = (text: string) => text.charAt(0).toUpperCase() + text.slice(1)

export const WORDS: Record<Language, Words> = { en, es, pt }
