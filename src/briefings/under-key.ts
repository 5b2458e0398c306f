import { loadAggregate } from '../eventstore/command-handler.ts'
import { type AppendResult, WrongExpectedRevision } from '../eventstore/port.ts'
import { isAppError } from '../shared/errors.ts'
import { DependencyUnavailable, isUnavailable, outsideRequests } from '../runtime/dependency.ts'
import { type BriefingResponse, briefingOf, replayOf, respond } from '../domain/briefings/answer.ts'
import { type BriefingGenerated, quotaStream } from '../domain/briefings/events.ts'
import {
  attemptEventId,
  attemptMonth,
  briefingReplayed,
  type IdempotencyCommand,
  idempotencyDecider,
  type IdempotencyState,
  type IdempotentRequest,
  nextStep,
  replayStream,
} from '../domain/briefings/idempotency.ts'
import type { BriefingInput, Persona } from '../domain/briefings/personas/index.ts'
import { type QuotaPolicy, usageOf } from '../domain/briefings/quota.ts'
import type { Answering, KeyRun } from './answering.ts'
import type { Briefed, BriefingServiceDeps, Caller } from './deps.ts'

/** How often a request waits for another process that holds the same Idempotency-Key. */
const IDEMPOTENCY_POLL_MS = 100
/** How often a release the event store refused for an outage is tried again (within the lease). */
const RELEASE_RETRY_MS = 250
/** How many times a claim whose append outcome is unknown is looked for once the store answers (5 s). */
const LATE_CLAIM_TRIES = 20

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** One round of a request under an Idempotency-Key: its answer, or null to ask again. */
export type KeyRound = (stream: string, request: IdempotentRequest, persona: Persona, input: BriefingInput, cacheKey: string, caller: Caller) => Promise<Briefed | null>

/**
 * Requests with an Idempotency-Key (see src/domain/briefings/idempotency.ts): claim the key (its
 * stream), charge or record the cache hit (the owner's month streams), complete the key (its stream,
 * expecting the claim). Each is one stream's append; a request continuing an attempt whose run died
 * or failed after its charge completes the key from that charge instead of charging again.
 */
export function keyRounds(deps: BriefingServiceDeps & { leaseMs: number; quotas: QuotaPolicy }, answer: Answering): KeyRound {
  const { store, random, clock } = deps

  /** Decides on the key's state and appends the events at `expected`; what the key then is. */
  async function record(stream: string, command: IdempotencyCommand, state: IdempotencyState, expected: number | 'no_stream') {
    const events = idempotencyDecider.decide(command, state)
    if (events.length === 0) return null
    const appended = await store.append(stream, events.map((event) => ({ id: random.uuid(), ...event })), expected)
    return { state: events.reduce(idempotencyDecider.evolve, state), appended }
  }

  /** The attempt's charge, if an earlier run recorded one: the key's result is that briefing. */
  async function recover(run: KeyRun, caller: Caller): Promise<BriefingResponse | null> {
    const id = attemptEventId(run.keyStream, run.attempt.attemptId, 'BriefingGenerated')
    const charge = (await store.readStream(quotaStream(caller.ownerId, run.month))).find((e) => e.id.toLowerCase() === id)
    if (!charge) return null
    return respond(briefingOf(charge.data as BriefingGenerated), false, usageOf(deps.quotas, caller.tier, charge.revision + 1))
  }

  /**
   * Runs `release` outside the request that failed (whose calls would fail at once, see
   * src/runtime/dependency.ts), again every RELEASE_RETRY_MS while the store is unavailable or it
   * answers `again`, within the lease and at most LATE_CLAIM_TRIES times for `again`.
   */
  function releaseWhenBack(release: () => Promise<'done' | 'again'>) {
    const until = Date.now() + deps.leaseMs - RELEASE_RETRY_MS
    let tries = 0
    const attempt = () =>
      void outsideRequests(release).then(
        (outcome) => outcome === 'again' && ++tries <= LATE_CLAIM_TRIES && later(),
        (failure) => isUnavailable(failure) && later(),
      )
    const later = () => Date.now() < until && setTimeout(attempt, RELEASE_RETRY_MS)
    later()
  }

  return async function round(stream, request, persona, input, cacheKey, caller) {
    const now = clock()
    const { state, revision } = await loadAggregate(store, stream, idempotencyDecider)
    const step = nextStep(state, request, now)
    switch (step.kind) {
      case 'conflict':
        throw step.error
      case 'wait':
        await sleep(Math.max(1, Math.min(IDEMPOTENCY_POLL_MS, step.until.getTime() - now.getTime())))
        return null
      case 'replay': {
        const data = briefingReplayed({ briefingId: step.briefingId, asker: caller, persona: persona.id, key: request.key, firstAt: step.firstAt, at: now })
        await store.append(replayStream(caller.ownerId, data.quota_month), [{ id: random.uuid(), type: 'BriefingReplayed', data }], 'any')
        return { briefing: replayOf(step.response as BriefingResponse), replayed: true }
      }
      case 'claim': {
        const claimId = random.uuid()
        const claim: IdempotencyCommand = { type: 'ClaimKey', request, claimId, leaseMs: deps.leaseMs, at: now }
        let claimed: { state: IdempotencyState; appended: AppendResult } | null
        try {
          claimed = await record(stream, claim, state, revision)
        } catch (error) {
          if (error instanceof WrongExpectedRevision) return null // another request claimed it first
          // The store went away mid-append: the claim may still be recorded (a frozen connection
          // delivering it late) and would hold the key for its lease. Released once the store
          // answers, if it turns up while nothing else was appended to the key.
          if (isUnavailable(error) && !(error instanceof DependencyUnavailable && !error.sent)) {
            releaseWhenBack(async () => {
              const current = await loadAggregate(store, stream, idempotencyDecider)
              if (current.revision === revision) return 'again'
              // Nothing is appended unless this claim holds the key.
              await record(stream, { type: 'ReleaseKey', request, claimId, error: error.code, mayHaveRecorded: false, at: clock() }, current.state, current.revision)
              return 'done'
            })
          }
          throw error
        }
        if (claimed?.state.status !== 'claimed' || !claimed.state.attempt) return null
        const { attempt } = claimed.state
        const run: KeyRun = { keyStream: stream, attempt: { key: request.key, attemptId: attempt.id }, month: attemptMonth(attempt), mayHaveRecorded: false }
        const holding = (command: IdempotencyCommand) => record(stream, command, claimed.state, claimed.appended.revision)
        try {
          const briefing = (step.continuing && (await recover(run, caller))) || (await answer(persona, input, cacheKey, caller, now, run))
          const completed = await holding({ type: 'CompleteKey', request, claimId, briefingId: briefing.briefing_id, response: briefing, at: clock() })
          if (!completed) return null
          return { briefing, replayed: false }
        } catch (error) {
          // Outlived its lease: another request holds the key now, and completes it from this charge if there is one.
          if (error instanceof WrongExpectedRevision && error.stream === stream) return null
          const code = isAppError(error) ? error.code : 'internal'
          // Released now, or (the store being away) as soon as it is back, so that a retry need not wait
          // for the lease; failing that the lease frees the key (the next run of the attempt looks for its charge).
          const release = () => holding({ type: 'ReleaseKey', request, claimId, error: code, mayHaveRecorded: run.mayHaveRecorded, at: clock() })
          await release().catch((failure) => isUnavailable(failure) && releaseWhenBack(async () => (await release(), 'done')))
          throw error
        }
      }
      default: {
        const never: never = step
        throw new Error(`unhandled ${JSON.stringify(never)}`)
      }
    }
  }
}
