import type { Confidence } from './analysis.ts'
import type { ZoneFacts } from './facts.ts'
import type { BriefingInput, Persona } from './personas/index.ts'
import { renderBriefing } from './render.ts'

/** What a writer produces; the service checks the verdict against the persona's vocabulary. */
export type BriefingDraft = {
  verdict: string
  confidence: Confidence
  headline: string
  body_md: string
  /** Which writer wrote it (`local_analyst`, `openai`) and with which model or rule version. */
  writer: string
  model: string
}

/** The port every briefing writer implements. Failures are `fail.upstreamError` (src/shared/errors.ts). */
export interface BriefingWriter {
  write(persona: Persona, input: BriefingInput, facts: ZoneFacts): Promise<BriefingDraft>
}

/** Version of the analyst's rules, recorded in every event it writes (bump when the rules change; 2: broker and homebuyer judged against estimates). */
export const LOCAL_ANALYST_MODEL = 'mirador-analyst-2'

/** The default writer: deterministic, offline, derived from the zone statistics and the estimate by the persona's rules. */
export const localAnalyst: BriefingWriter = {
  async write(persona, input, facts) {
    const assessment = persona.assess(input, facts)
    return {
      verdict: assessment.verdict,
      confidence: assessment.confidence,
      ...renderBriefing(persona, input, facts, assessment),
      writer: 'local_analyst',
      model: LOCAL_ANALYST_MODEL,
    }
  },
}
