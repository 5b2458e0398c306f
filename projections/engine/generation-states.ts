/**
 * The generation state machine, pure: given a projection's generations (as its registry rows hold
 * them) and the version the code projects, what an action changes, or why it is refused. The
 * transitions it decides are applied by generations.ts, in the transaction that read the rows.
 *
 *   building ──(caught up)──► live ──(another promoted)──► previous ──(another promoted)──► retired
 *        └──(--hold)──► held ──(promote)──┘        ▲                 │
 *                                                  └──(rollback)─────┘
 *
 * Exactly one generation per projection is live. `prune` retires every other one except a build in
 * progress, and their tables and rows go once every process has switched.
 */

export type GenerationState = 'building' | 'held' | 'live' | 'previous' | 'retired'

/** Which generation: the code version that built it and its build number. */
export type GenerationRef = { version: number; build: number }

/** What the state machine reads of a generation. */
export type Generation = GenerationRef & {
  state: GenerationState
  /** A build that stops at `held` instead of going live when caught up. */
  hold: boolean
  /** Its checkpoint: the position of the last event applied to its tables. */
  position: number
}

/** One projection's registry, as the code running now sees it. */
export type Registry = { projection: string; codeVersion: number; generations: readonly Generation[] }

/** The name people and the status table use for a generation: `v2.1` (version 2, build 1). */
export const generationId = (g: GenerationRef) => `v${g.version}.${g.build}`

/** One change of one registry row. */
export type Transition =
  /** A new generation of the code's version: built from position 0, or live at once on a fresh store. */
  | { kind: 'register'; generation: GenerationRef; state: 'building' | 'live'; hold: boolean }
  /** An interrupted build resumed with the other choice of `--hold`. */
  | { kind: 'set hold'; generation: GenerationRef; hold: boolean }
  /** A build started with `--hold` has caught up: it waits for `promote`. */
  | { kind: 'hold'; generation: GenerationRef }
  /** The live generation steps down when another is switched to (kept current for a rollback). */
  | { kind: 'make previous'; generation: GenerationRef }
  | { kind: 'make live'; generation: GenerationRef }
  /** No longer followed nor served: a superseded held build, the previous of a previous, or pruned. */
  | { kind: 'retire'; generation: GenerationRef }

export type GenerationAction =
  /** Every start: a store without a live generation gets one (built in place); a new code version gets a build. */
  | { type: 'prepare' }
  /**
   * `projections rebuild`: resumes the interrupted build of the code's version, or starts a new one
   * (superseding a held one never promoted). `hold` undefined keeps an interrupted build's choice;
   * `resumeOnly` (a serving process) starts nothing new.
   */
  | { type: 'build'; hold?: boolean; resumeOnly?: boolean }
  /** A build has caught up with the head. */
  | { type: 'finish build'; generation: GenerationRef }
  /** `projections promote`: the newest held generation goes live. */
  | { type: 'promote' }
  /** `projections rollback`: the previous generation goes live again. */
  | { type: 'rollback' }
  /** Makes `to` live now that it has caught up to `caughtUpTo` (ignored for a generation of another version: it is served as it is). */
  | { type: 'switch'; to: GenerationRef; caughtUpTo: number }
  /** `projections prune`: a build in progress goes too only when the caller holds its build lock. */
  | { type: 'prune'; buildLockHeld: boolean }

/** Refused, with the reason the operator reads (a `conflict`). */
export type Refused = { outcome: 'refused'; reason: string }
/** The changes to make, in order (none: nothing to do). */
export type Changes = { outcome: 'changes'; changes: readonly Transition[] }
/** The changes, then the build of `generation`, from its checkpoint. */
export type Build = { outcome: 'build'; changes: readonly Transition[]; generation: Generation }
/** Nothing changes yet: catch `generation` up (again), then decide `switch` to it. */
export type Switch = { outcome: 'switch'; generation: Generation }
/** The changes retire `generations`; their tables and rows are then dropped, once every process has switched. */
export type Drop = { outcome: 'drop'; changes: readonly Transition[]; generations: readonly Generation[] }

/** What each action can come to. */
type Outcomes = {
  prepare: Changes
  build: Build | Changes
  'finish build': Refused | Changes | Switch
  promote: Refused | Switch
  rollback: Refused | Switch
  switch: Refused | Switch | Changes
  prune: Drop
}
export type Decision<A extends GenerationAction = GenerationAction> = Outcomes[A['type']]

/** Whether `b` is the generation `a`. */
export const sameGeneration = (a: GenerationRef) => (b: GenerationRef) => a.version === b.version && a.build === b.build
const ref = (g: GenerationRef): GenerationRef => ({ version: g.version, build: g.build })

/** Whether the code keeps `g` current: its version, and live, held or previous (so that promote and rollback switch to current data). */
export const isFollowed = (codeVersion: number, g: Generation) =>
  g.version === codeVersion && (g.state === 'live' || g.state === 'held' || g.state === 'previous')

/** The generations the code keeps current, live first. */
export function followedGenerations<G extends Generation>(codeVersion: number, generations: readonly G[]): G[] {
  return generations.filter((g) => isFollowed(codeVersion, g)).sort((a, b) => Number(b.state === 'live') - Number(a.state === 'live'))
}

/** A new generation of the code's version: the next build number of that version. */
function next(registry: Registry, state: 'building' | 'live', hold: boolean): { transition: Transition; generation: Generation } {
  const builds = registry.generations.filter((g) => g.version === registry.codeVersion).map((g) => g.build)
  const generation = { version: registry.codeVersion, build: Math.max(0, ...builds) + 1 }
  return { transition: { kind: 'register', generation, state, hold }, generation: { ...generation, state, hold, position: 0 } }
}

export function decide<A extends GenerationAction>(registry: Registry, action: A): Decision<A> {
  return decideAny(registry, action) as Decision<A>
}

function decideAny(registry: Registry, action: GenerationAction): Decision {
  const { projection, codeVersion, generations } = registry
  const live = generations.find((g) => g.state === 'live')
  switch (action.type) {
    case 'prepare': {
      if (!live) return { outcome: 'changes', changes: [next(registry, 'live', false).transition] }
      if (live.version !== codeVersion && !generations.some((g) => g.version === codeVersion)) {
        return { outcome: 'changes', changes: [next(registry, 'building', false).transition] }
      }
      return { outcome: 'changes', changes: [] }
    }
    case 'build': {
      const interrupted = generations.find((g) => g.version === codeVersion && g.state === 'building')
      if (interrupted) {
        const hold = action.hold ?? interrupted.hold
        const changes: Transition[] = hold === interrupted.hold ? [] : [{ kind: 'set hold', generation: ref(interrupted), hold }]
        return { outcome: 'build', changes, generation: { ...interrupted, hold } }
      }
      if (action.resumeOnly) return { outcome: 'changes', changes: [] }
      const fresh = next(registry, 'building', action.hold ?? false)
      const superseded = generations.filter((g) => g.state === 'held').map((g): Transition => ({ kind: 'retire', generation: ref(g) }))
      return { outcome: 'build', changes: [...superseded, fresh.transition], generation: fresh.generation }
    }
    case 'finish build': {
      const built = generations.find(sameGeneration(action.generation))
      if (built?.state !== 'building') {
        return { outcome: 'refused', reason: `${projection} ${generationId(action.generation)} was pruned while it was being built` }
      }
      return built.hold ? { outcome: 'changes', changes: [{ kind: 'hold', generation: ref(built) }] } : { outcome: 'switch', generation: built }
    }
    case 'promote': {
      const held = generations.filter((g) => g.state === 'held').at(-1)
      if (held) return { outcome: 'switch', generation: held }
      const building = generations.find((g) => g.state === 'building')
      return {
        outcome: 'refused',
        reason: building
          ? `${projection} ${generationId(building)} is still building (position ${building.position}); a build goes live by itself when it has caught up, unless it was started with --hold`
          : `${projection} has no held generation; \`projections rebuild ${projection} --hold\` builds one`,
      }
    }
    case 'rollback': {
      const previous = generations.find((g) => g.state === 'previous')
      if (previous) return { outcome: 'switch', generation: previous }
      return { outcome: 'refused', reason: `${projection} has no previous generation to roll back to (pruned, or never promoted)` }
    }
    case 'switch': {
      const target = generations.find(sameGeneration(action.to))
      if (!target || target.state === 'retired' || target.state === 'live') {
        return { outcome: 'refused', reason: `${projection} ${generationId(action.to)} is ${target ? target.state : 'gone'}: nothing to switch to` }
      }
      if (target.version === codeVersion) {
        // Events were applied to it since it was caught up: it may be short of the head again.
        if (target.position !== action.caughtUpTo) return { outcome: 'switch', generation: target }
        // Never behind the generation it replaces: readers would see the market go back in time.
        if (live && live.version === codeVersion && live.position > target.position) return { outcome: 'switch', generation: target }
      }
      const changes: Transition[] = generations
        .filter((g) => g.state === 'previous' && g !== target)
        .map((g) => ({ kind: 'retire', generation: ref(g) }))
      if (live) changes.push({ kind: 'make previous', generation: ref(live) })
      changes.push({ kind: 'make live', generation: ref(target) })
      return { outcome: 'changes', changes }
    }
    case 'prune': {
      const victims = generations.filter((g) => g.state !== 'live' && (g.state !== 'building' || action.buildLockHeld))
      const changes = victims.filter((g) => g.state !== 'retired').map((g): Transition => ({ kind: 'retire', generation: ref(g) }))
      return { outcome: 'drop', changes, generations: victims }
    }
    default: {
      const never: never = action
      throw new Error(`unhandled generation action ${JSON.stringify(never)}`)
    }
  }
}
