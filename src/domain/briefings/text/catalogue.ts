import type { Language } from '../analysis.ts'
import en from './en.json' with { type: 'json' }
import es from './es.json' with { type: 'json' }
import pt from './pt.json' with { type: 'json' }

/**
 * The fixed words of a briefing, one JSON file per language: a translator edits one file, and the
 * three files have the same keys (the types that read them check it). The sentences built around
 * figures are templates in words.ts.
 */
const CATALOGUES = { en, es, pt } as const satisfies Record<Language, unknown>

type PersonaKey = keyof typeof en.personas

/** One persona's words in every language (its `text`, src/domain/briefings/personas/define.ts). */
export const personaText = <I extends PersonaKey>(id: I) => ({ en: en.personas[id], es: es.personas[id], pt: pt.personas[id] })

/** What a briefing says, per language, of a figure it could not compute. */
export const missingText = (language: Language) => CATALOGUES[language].missing

/** The fixed words of a briefing's estimate (its section and its findings), per language. */
export const estimateText = (language: Language) => CATALOGUES[language].estimate
