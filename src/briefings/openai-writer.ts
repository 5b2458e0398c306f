import { Type } from '@sinclair/typebox'
import OpenAI from 'openai'
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions'
import { AppError, fail } from '../shared/errors.ts'
import { fieldErrors } from '../shared/validate.ts'
import { CONFIDENCE_LEVELS, type Confidence } from '../domain/briefings/analysis.ts'
import type { ZoneFacts } from '../domain/briefings/facts.ts'
import type { BriefingInput, Persona } from '../domain/briefings/personas/index.ts'
import { type BriefingDraft, type BriefingWriter, localAnalyst } from '../domain/briefings/writer.ts'

export type OpenAiOptions = { apiKey: string; baseUrl?: string; model: string; timeoutMs: number }

const LANGUAGE_NAMES = { es: 'Spanish', en: 'English', pt: 'Brazilian Portuguese' } as const
const MAX_HEADLINE = 300

/**
 * The answer the model must give. `enum` is not checked by TypeBox on strings, so the vocabulary
 * is checked in code (with a precise message); the schema itself goes to OpenAI as json_schema.
 */
const answerSchema = (persona: Persona) =>
  Type.Object(
    {
      verdict: Type.String({ enum: [...persona.verdicts] }),
      confidence: Type.String({ enum: [...CONFIDENCE_LEVELS] }),
      headline: Type.String({ description: `one line, at most ${MAX_HEADLINE} characters` }),
      body_md: Type.String({ description: 'the briefing in Markdown' }),
    },
    { additionalProperties: false },
  )

type Answer = { verdict: string; confidence: Confidence; headline: string; body_md: string }

/** What is wrong with the model's text as a briefing for `persona`, or the parsed answer. */
function readAnswer(persona: Persona, content: string | null | undefined): { answer: Answer } | { problem: string } {
  if (!content) return { problem: 'the answer was empty' }
  let parsed: unknown
  try {
    parsed = JSON.parse(content)
  } catch {
    return { problem: 'the answer was not valid JSON' }
  }
  const errors = fieldErrors(answerSchema(persona), parsed)
  if (errors.length > 0) return { problem: `the answer did not match the schema (${errors.map((e) => `${e.field}: ${e.message}`).join('; ')})` }
  const answer = parsed as Answer
  if (!persona.verdicts.includes(answer.verdict)) {
    return { problem: `verdict "${answer.verdict}" is not one of ${persona.verdicts.join(', ')}` }
  }
  if (!(CONFIDENCE_LEVELS as readonly string[]).includes(answer.confidence)) {
    return { problem: `confidence "${answer.confidence}" is not one of ${CONFIDENCE_LEVELS.join(', ')}` }
  }
  if (!answer.headline.trim() || answer.headline.length > MAX_HEADLINE || answer.headline.includes('\n')) {
    return { problem: `the headline must be one non-empty line of at most ${MAX_HEADLINE} characters` }
  }
  if (!answer.body_md.trim()) return { problem: 'body_md was empty' }
  return { answer }
}

function prompt(persona: Persona, input: BriefingInput, facts: ZoneFacts): ChatCompletionMessageParam[] {
  // The analyst's derived figures (yield, gaps to the country, budget share) are facts too; its verdict is not shared.
  const derived = persona.assess(input, facts).findings
  return [
    {
      role: 'system',
      content: [
        `You are Mirador's real-estate market analyst. Write a briefing for a ${persona.name.toLowerCase()} (profile: ${input.profile}) about ${input.zone}, country ${input.country}, in ${LANGUAGE_NAMES[input.language]}.`,
        'Use only the figures in the facts below; cite every figure you rely on (USD amounts, percentages, days, listing counts). Never invent numbers.',
        `The verdict must be exactly one of: ${persona.verdicts.join(', ')}. Decision rules: ${persona.rules}`,
        'Confidence: high when 30 or more listings stand behind the main figure, medium for 10 to 29, low below 10 or when key figures are null, unless the rules say otherwise.',
        'facts.estimate, when present, is the estimate of the property the request describes (as GET /estimate answers it): judge it by the rules, state its price, range and confidence, and name the listing_id of every comparable it rests on. When facts.estimate.estimate is null there were too few comparables: say so and use the zone rule.',
        `The headline is one line (at most ${MAX_HEADLINE} characters). body_md is Markdown with a short table of the figures used, the reasoning as bullets and a recommendation; at most 400 words.`,
        'Answer with the JSON object only.',
      ].join('\n'),
    },
    { role: 'user', content: JSON.stringify({ request: input, facts, derived_figures: derived }) },
  ]
}

/** The upstream_error of a failed call to the writer (also the OpenAPI document's example). */
export function upstreamFailure(error: unknown, timeoutMs: number): AppError {
  if (error instanceof OpenAI.APIConnectionTimeoutError) {
    return fail.upstreamError(`the AI writer did not answer within ${timeoutMs / 1000} s; no quota was used`)
  }
  if (error instanceof OpenAI.APIError && error.status !== undefined) {
    return fail.upstreamError(`the AI writer failed (HTTP ${error.status}); no quota was used`)
  }
  if (error instanceof OpenAI.APIConnectionError) {
    return fail.upstreamError('the AI writer could not be reached; no quota was used')
  }
  return fail.upstreamError('the AI writer failed; no quota was used')
}

/**
 * Briefings written by an OpenAI chat model (or any server speaking the chat-completions protocol,
 * via `baseUrl`), with structured JSON output. An answer that is malformed or outside the persona's
 * vocabulary gets one retry (told what was wrong); a second bad answer, an HTTP error or a timeout
 * is `upstream_error`. The SDK's own retries are off so that one request waits at most two timeouts.
 */
export function openAiWriter(options: OpenAiOptions): BriefingWriter {
  const client = new OpenAI({
    apiKey: options.apiKey,
    baseURL: options.baseUrl,
    timeout: options.timeoutMs,
    maxRetries: 0,
  })
  return {
    async write(persona, input, facts): Promise<BriefingDraft> {
      const messages = prompt(persona, input, facts)
      const schema = JSON.parse(JSON.stringify(answerSchema(persona))) as Record<string, unknown>
      let problem = ''
      for (let attempt = 1; attempt <= 2; attempt++) {
        let completion: OpenAI.Chat.Completions.ChatCompletion
        try {
          completion = await client.chat.completions.create({
            model: options.model,
            messages,
            temperature: 0.2,
            response_format: { type: 'json_schema', json_schema: { name: `${persona.id}_briefing`, strict: true, schema } },
          })
        } catch (error) {
          throw upstreamFailure(error, options.timeoutMs)
        }
        const message = completion.choices[0]?.message
        const read = message?.refusal ? { problem: 'the model refused to answer' } : readAnswer(persona, message?.content)
        if ('answer' in read) {
          return { ...read.answer, writer: 'openai', model: completion.model || options.model }
        }
        problem = read.problem
        messages.push(
          { role: 'assistant', content: message?.content ?? '' },
          { role: 'user', content: `That answer was rejected: ${problem}. Answer again with the JSON object only.` },
        )
      }
      throw fail.upstreamError(`the AI writer gave no usable briefing after 2 attempts (${problem}); no quota was used`)
    },
  }
}

/** The writer the configuration asks for: OpenAI when an API key is set, else the local analyst. */
export function writerFor(config: { apiKey: string | undefined; baseUrl: string | undefined; model: string; timeoutMs: number }): BriefingWriter {
  return config.apiKey ? openAiWriter({ ...config, apiKey: config.apiKey }) : localAnalyst
}
