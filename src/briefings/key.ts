import { loadAggregate } from '../eventstore/command-handler.ts'
import { WrongExpectedRevision } from '../eventstore/port.ts'
import { isAppError } from '../shared/errors.ts'
import { DependencyUnavailable, isUnavailable, outsideRequests } from '../runtime/dependency.ts'
import { type BriefingResponse, briefingOf, replayOf, respond } from '../domain/briefings/answer.ts'
import {
  attemptEventId,
  attemptMonth,
  briefingReplayed,
  type IdempotencyCommand,
  idempotencyDecider,
  type IdempotencyState,
  type IdempotentRequest,
  nextStep,
} from '../domain/briefings/idempotency.ts'
import type { Ask, Briefed, BriefingServiceDeps, KeyRun } from './deps.ts'
import { FailedRecording, sending } from './deps.ts'
import type { QuotaLedger } from './ledger.ts'

/** How often a request waits for another process that holds the same Idempotency-Key. */
const IDEMPOTENCY_POLL_MS = 100
/** How often a release the event store refused for an outage is tried again (within the lease). */
const RELEASE_RETRY_MS = 250
/** How many times a claim whose append outcome is unknown is looked for once the store answers (5 s). */
const LATE_CLAIM_TRIES = 20

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** A claim this run holds: what completing or releasing the key expects, and the run's attempt. */
export type Held = {
  stream: string
  request: IdempotentRequest
  claimId: string
  state: IdempotencyState
  revision: number
  run: KeyRun
  /** Continuing an attempt whose earlier run may have charged: its charge is looked for first. */
  continuing: boolean
}

/** Step 2's outcome: the key held by this run, or the key's answer without running (a replay; null to ask again). */
export type Claim = { kind: 'held'; held: Held } | { kind: 'answered'; briefed: Briefed | null }

/**
 * Steps 2 and 7 of the briefing pipeline (src/briefings/service.ts), for requests with an
 * Idempotency-Key (see src/domain/briefings/idempotency.ts): claim the key (its stream), then
 * complete it expecting the claim, or release it on failure. A run continuing an attempt whose run
 * died or failed after its charge completes the key from that charge instead of charging again.
 */
export class KeySteps {
  constructor(
    private readonly deps: Pick<BriefingServiceDeps, 'store' | 'random' | 'clock'> & { leaseMs: number },
    private readonly ledger: QuotaLedger,
  ) {}

  /** 2. Claim the key: 409 for another request, a replay of its result, a wait while another run holds it, or the claim. */
  async claim(ask: Ask, key: NonNullable<Ask['key']>, now: Date): Promise<Claim> {
    const { state, revision } = await loadAggregate(this.deps.store, key.stream, idempotencyDecider)
    const step = nextStep(state, key.request, now)
    switch (step.kind) {
      case 'conflict':
        throw step.error
      case 'wait':
        await sleep(Math.max(1, Math.min(IDEMPOTENCY_POLL_MS, step.until.getTime() - now.getTime())))
        return { kind: 'answered', briefed: null }
      case 'replay': {
        const data = briefingReplayed({ briefingId: step.briefingId, asker: ask.caller, persona: ask.persona.id, key: key.request.key, firstAt: step.firstAt, at: now })
        const id = this.deps.random.uuid()
        const record = { eventId: id, type: 'BriefingReplayed' as const, briefingId: data.briefing_id, ownerId: data.owner_id, month: data.quota_month }
        // On the key's own stream, where it was decided: replays of other keys never wait for each other.
        await sending(ask, record, () => this.deps.store.append(key.stream, [{ id, type: 'BriefingReplayed', data }], 'any'))
        return { kind: 'answered', briefed: { briefing: replayOf(step.response as BriefingResponse), replayed: true } }
      }
      case 'claim': {
        const held = await this.claimKey(key.stream, key.request, state, revision, step.continuing !== null, now)
        return held ? { kind: 'held', held } : { kind: 'answered', briefed: null }
      }
      default: {
        const never: never = step
        throw new Error(`unhandled ${JSON.stringify(never)}`)
      }
    }
  }

  /** The attempt's charge, if an earlier run recorded one: the key's result is that briefing. */
  async recover(held: Held, ask: Ask): Promise<BriefingResponse | null> {
    const eventId = attemptEventId(held.stream, held.run.attempt.attemptId, 'BriefingGenerated')
    const charged = await this.ledger.recorded(ask.caller.ownerId, ask.caller.tier, held.run.month, eventId)
    return charged && respond(briefingOf(charged.briefing), false, charged.usage)
  }

  /**
   * The quota refused this run of an attempt that an earlier run may have charged: that charge can
   * land after this run looked for it (its append was still on its way when its request gave up), and
   * the quota then counts it. Its briefing is the key's result, not a refusal; else the refusal stands.
   */
  async recoverRefused(held: Held, ask: Ask, refusal: unknown): Promise<BriefingResponse> {
    const charged = held.continuing && isAppError(refusal) && refusal.code === 'quota_exceeded' ? await this.recover(held, ask) : null
    if (charged) return charged
    throw refusal
  }

  /** 7. Complete the key with its first result; null if another run took the key over meanwhile. */
  async complete(held: Held, briefing: BriefingResponse): Promise<Briefed | null> {
    const completed = await this.holding(held, { type: 'CompleteKey', request: held.request, claimId: held.claimId, briefingId: briefing.briefing_id, response: briefing, at: this.deps.clock() })
    return completed && { briefing, replayed: false }
  }

  /**
   * The run failed: releases the key now, or (the store being away) as soon as it is back, so that a
   * retry need not wait for the lease; failing that the lease frees the key (the next run of the
   * attempt looks for its charge). Throws the failure, or answers null when the run outlived its
   * lease: another request holds the key now, and completes it from this charge if there is one.
   */
  async release(held: Held, failure: unknown): Promise<null> {
    const error = FailedRecording.causeOf(failure)
    if (error instanceof WrongExpectedRevision && error.stream === held.stream) return null
    const mayHaveRecorded = failure instanceof FailedRecording
    const code = isAppError(error) ? error.code : 'internal'
    const release = () => this.holding(held, { type: 'ReleaseKey', request: held.request, claimId: held.claimId, error: code, mayHaveRecorded, at: this.deps.clock() })
    await release().catch((failure) => isUnavailable(failure) && this.releaseWhenBack(async () => (await release(), 'done')))
    throw error
  }

  /** Appends the claim; null when another request claimed first. */
  private async claimKey(stream: string, request: IdempotentRequest, state: IdempotencyState, revision: number | 'no_stream', continuing: boolean, now: Date): Promise<Held | null> {
    const claimId = this.deps.random.uuid()
    try {
      const claimed = await this.record(stream, { type: 'ClaimKey', request, claimId, leaseMs: this.deps.leaseMs, at: now }, state, revision)
      if (claimed?.state.status !== 'claimed' || !claimed.state.attempt) return null
      const { attempt } = claimed.state
      const run = { keyStream: stream, attempt: { key: request.key, attemptId: attempt.id }, month: attemptMonth(attempt) }
      return { stream, request, claimId, state: claimed.state, revision: claimed.appended.revision, run, continuing }
    } catch (error) {
      if (error instanceof WrongExpectedRevision) return null // another request claimed it first
      // The store went away mid-append: the claim may still be recorded (a frozen connection
      // delivering it late) and would hold the key for its lease. Released once the store
      // answers, if it turns up while nothing else was appended to the key.
      if (isUnavailable(error) && !(error instanceof DependencyUnavailable && !error.sent)) {
        this.releaseWhenBack(async () => {
          const current = await loadAggregate(this.deps.store, stream, idempotencyDecider)
          if (current.revision === revision) return 'again'
          // Nothing is appended unless this claim holds the key.
          const release: IdempotencyCommand = { type: 'ReleaseKey', request, claimId, error: error.code, mayHaveRecorded: false, at: this.deps.clock() }
          await this.record(stream, release, current.state, current.revision)
          return 'done'
        })
      }
      throw error
    }
  }

  /** Decides on the key's state and appends the events at `expected`; what the key then is. */
  private async record(stream: string, command: IdempotencyCommand, state: IdempotencyState, expected: number | 'no_stream') {
    const events = idempotencyDecider.decide(command, state)
    if (events.length === 0) return null
    const appended = await this.deps.store.append(stream, events.map((event) => ({ id: this.deps.random.uuid(), ...event })), expected)
    return { state: events.reduce(idempotencyDecider.evolve, state), appended }
  }

  /** Records `command` on the key this run holds (nothing if another run has taken it over). */
  private holding(held: Held, command: IdempotencyCommand) {
    return this.record(held.stream, command, held.state, held.revision)
  }

  /**
   * Runs `release` outside the request that failed (whose calls would fail at once, see
   * src/runtime/dependency.ts), again every RELEASE_RETRY_MS while the store is unavailable or it
   * answers `again`, within the lease and at most LATE_CLAIM_TRIES times for `again`.
   */
  private releaseWhenBack(release: () => Promise<'done' | 'again'>) {
    const until = Date.now() + this.deps.leaseMs - RELEASE_RETRY_MS
    let tries = 0
    const attempt = () =>
      void outsideRequests(release).then(
        (outcome) => outcome === 'again' && ++tries <= LATE_CLAIM_TRIES && later(),
        (failure) => isUnavailable(failure) && later(),
      )
    const later = () => Date.now() < until && setTimeout(attempt, RELEASE_RETRY_MS)
    later()
  }
}
