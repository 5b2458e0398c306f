import { describe, expect, it } from 'vitest'
import {
  decide,
  followedGenerations,
  type Generation,
  type GenerationAction,
  type GenerationState,
  type Registry,
} from '../../projections/engine/generation-states.ts'

/**
 * The generation state machine without a database: given a projection's generations and the
 * version the code projects, what each action changes in the registry, or the refusal the operator
 * reads.
 */

/** `v2.1` in `state`, at `position`. */
const gen = (id: string, state: GenerationState, position = 100, hold = false): Generation => {
  const [version, build] = id.slice(1).split('.').map(Number)
  return { version: version!, build: build!, state, position, hold }
}
const v = (id: string) => {
  const [version, build] = id.slice(1).split('.').map(Number)
  return { version: version!, build: build! }
}
/** The registry of `listings` as code of `codeVersion` sees it. */
const listings = (codeVersion: number, ...generations: Generation[]): Registry => ({ projection: 'listings', codeVersion, generations })
const when = (registry: Registry, action: GenerationAction) => decide(registry, action)

describe('prepare', () => {
  it('gives a fresh store a live generation of the code version, built in place', () => {
    expect(when(listings(2), { type: 'prepare' })).toEqual({
      outcome: 'changes',
      changes: [{ kind: 'register', generation: v('v2.1'), state: 'live', hold: false }],
    })
  })

  it('registers the build of a new code version beside the live generation of the old one', () => {
    expect(when(listings(3, gen('v2.1', 'live')), { type: 'prepare' })).toEqual({
      outcome: 'changes',
      changes: [{ kind: 'register', generation: v('v3.1'), state: 'building', hold: false }],
    })
  })

  it('numbers a new live generation after the builds its version already has', () => {
    expect(when(listings(2, gen('v2.1', 'retired'), gen('v2.2', 'building')), { type: 'prepare' })).toMatchObject({
      changes: [{ kind: 'register', generation: v('v2.3'), state: 'live' }],
    })
  })

  it('changes nothing once the code version is live, or has a generation of any state', () => {
    expect(when(listings(2, gen('v2.1', 'live')), { type: 'prepare' })).toEqual({ outcome: 'changes', changes: [] })
    expect(when(listings(3, gen('v2.1', 'live'), gen('v3.1', 'held')), { type: 'prepare' })).toEqual({ outcome: 'changes', changes: [] })
    // Rolled back to version 2 by the operator: that choice stands, nothing is rebuilt by itself.
    expect(when(listings(3, gen('v2.1', 'live'), gen('v3.1', 'previous')), { type: 'prepare' })).toEqual({ outcome: 'changes', changes: [] })
  })
})

describe('build', () => {
  it('starts the next build of the code version, superseding held builds never promoted', () => {
    const registry = listings(2, gen('v2.1', 'previous'), gen('v2.2', 'live'), gen('v2.3', 'held', 90))
    expect(when(registry, { type: 'build', hold: true })).toEqual({
      outcome: 'build',
      changes: [
        { kind: 'retire', generation: v('v2.3') },
        { kind: 'register', generation: v('v2.4'), state: 'building', hold: true },
      ],
      generation: gen('v2.4', 'building', 0, true),
    })
  })

  it('resumes an interrupted build from its checkpoint, with the hold asked for', () => {
    const registry = listings(2, gen('v1.1', 'live'), gen('v2.1', 'building', 4000, true))
    expect(when(registry, { type: 'build' })).toEqual({ outcome: 'build', changes: [], generation: gen('v2.1', 'building', 4000, true) })
    expect(when(registry, { type: 'build', hold: false })).toEqual({
      outcome: 'build',
      changes: [{ kind: 'set hold', generation: v('v2.1'), hold: false }],
      generation: gen('v2.1', 'building', 4000, false),
    })
  })

  it('a serving process only resumes: with no interrupted build it starts nothing', () => {
    expect(when(listings(2, gen('v2.1', 'live')), { type: 'build', resumeOnly: true })).toEqual({ outcome: 'changes', changes: [] })
    expect(when(listings(2, gen('v2.1', 'live'), gen('v2.2', 'building', 7)), { type: 'build', resumeOnly: true })).toMatchObject({
      outcome: 'build',
      generation: { version: 2, build: 2, position: 7 },
    })
  })

  it('does not resume a build of another version: this code starts its own', () => {
    expect(when(listings(3, gen('v2.1', 'live'), gen('v2.2', 'building')), { type: 'build' })).toMatchObject({
      outcome: 'build',
      changes: [{ kind: 'register', generation: v('v3.1'), state: 'building' }],
    })
  })
})

describe('finish build', () => {
  it('holds a build started with --hold', () => {
    expect(when(listings(2, gen('v2.1', 'live'), gen('v2.2', 'building', 100, true)), { type: 'finish build', generation: v('v2.2') })).toEqual({
      outcome: 'changes',
      changes: [{ kind: 'hold', generation: v('v2.2') }],
    })
  })

  it('switches to any other build', () => {
    expect(when(listings(2, gen('v2.1', 'live'), gen('v2.2', 'building')), { type: 'finish build', generation: v('v2.2') })).toEqual({
      outcome: 'switch',
      generation: gen('v2.2', 'building'),
    })
  })

  it('refuses a build pruned meanwhile', () => {
    for (const registry of [listings(2, gen('v2.1', 'live'), gen('v2.2', 'retired')), listings(2, gen('v2.1', 'live'))]) {
      expect(when(registry, { type: 'finish build', generation: v('v2.2') })).toEqual({
        outcome: 'refused',
        reason: 'listings v2.2 was pruned while it was being built',
      })
    }
  })
})

describe('promote and rollback', () => {
  it('promote switches to the newest held generation', () => {
    expect(when(listings(2, gen('v2.1', 'live'), gen('v2.2', 'held'), gen('v2.3', 'held')), { type: 'promote' })).toEqual({
      outcome: 'switch',
      generation: gen('v2.3', 'held'),
    })
  })

  it('promote is refused without a held generation, naming a build still running', () => {
    expect(when(listings(2, gen('v2.1', 'live'), gen('v2.2', 'building', 4200)), { type: 'promote' })).toEqual({
      outcome: 'refused',
      reason:
        'listings v2.2 is still building (position 4200); a build goes live by itself when it has caught up, unless it was started with --hold',
    })
    expect(when(listings(2, gen('v2.1', 'live')), { type: 'promote' })).toEqual({
      outcome: 'refused',
      reason: 'listings has no held generation; `projections rebuild listings --hold` builds one',
    })
  })

  it('rollback switches to the previous generation, or is refused when there is none', () => {
    expect(when(listings(2, gen('v1.1', 'previous'), gen('v2.1', 'live')), { type: 'rollback' })).toEqual({
      outcome: 'switch',
      generation: gen('v1.1', 'previous'),
    })
    expect(when(listings(2, gen('v1.1', 'retired'), gen('v2.1', 'live')), { type: 'rollback' })).toEqual({
      outcome: 'refused',
      reason: 'listings has no previous generation to roll back to (pruned, or never promoted)',
    })
  })
})

describe('switch', () => {
  it('makes the target live, the live one previous and retires the previous one', () => {
    const registry = listings(2, gen('v2.1', 'previous'), gen('v2.2', 'live'), gen('v2.3', 'held'))
    expect(when(registry, { type: 'switch', to: v('v2.3'), caughtUpTo: 100 })).toEqual({
      outcome: 'changes',
      changes: [
        { kind: 'retire', generation: v('v2.1') },
        { kind: 'make previous', generation: v('v2.2') },
        { kind: 'make live', generation: v('v2.3') },
      ],
    })
  })

  it('swaps the live and the previous generation on a rollback (a second rollback undoes it)', () => {
    const registry = listings(2, gen('v2.1', 'previous'), gen('v2.2', 'live'))
    expect(when(registry, { type: 'switch', to: v('v2.1'), caughtUpTo: 100 })).toEqual({
      outcome: 'changes',
      changes: [
        { kind: 'make previous', generation: v('v2.2') },
        { kind: 'make live', generation: v('v2.1') },
      ],
    })
  })

  it('asks for another catch-up when the target moved past where it was caught up to', () => {
    const registry = listings(2, gen('v2.1', 'live', 120), gen('v2.2', 'held', 120))
    expect(when(registry, { type: 'switch', to: v('v2.2'), caughtUpTo: 110 })).toEqual({ outcome: 'switch', generation: gen('v2.2', 'held', 120) })
  })

  it('asks for another catch-up when the target is behind the live generation of the same version', () => {
    const registry = listings(2, gen('v2.1', 'live', 130), gen('v2.2', 'held', 120))
    expect(when(registry, { type: 'switch', to: v('v2.2'), caughtUpTo: 120 })).toEqual({ outcome: 'switch', generation: gen('v2.2', 'held', 120) })
  })

  it('switches to a generation of another version as it is: frozen, it is never caught up', () => {
    const registry = listings(2, gen('v1.1', 'previous', 40), gen('v2.1', 'live', 130))
    expect(when(registry, { type: 'switch', to: v('v1.1'), caughtUpTo: 0 })).toEqual({
      outcome: 'changes',
      changes: [
        { kind: 'make previous', generation: v('v2.1') },
        { kind: 'make live', generation: v('v1.1') },
      ],
    })
  })

  it('is refused for a generation live already, retired or gone', () => {
    const registry = listings(2, gen('v2.1', 'live'), gen('v2.2', 'retired'))
    expect(when(registry, { type: 'switch', to: v('v2.1'), caughtUpTo: 100 })).toEqual({
      outcome: 'refused',
      reason: 'listings v2.1 is live: nothing to switch to',
    })
    expect(when(registry, { type: 'switch', to: v('v2.2'), caughtUpTo: 100 })).toMatchObject({ reason: 'listings v2.2 is retired: nothing to switch to' })
    expect(when(registry, { type: 'switch', to: v('v2.9'), caughtUpTo: 100 })).toMatchObject({ reason: 'listings v2.9 is gone: nothing to switch to' })
  })
})

describe('prune', () => {
  const registry = listings(2, gen('v1.1', 'retired'), gen('v1.2', 'previous'), gen('v2.1', 'live'), gen('v2.2', 'held'), gen('v2.3', 'building'))

  it('retires and drops every generation but the live one and a build whose lock another process holds', () => {
    expect(when(registry, { type: 'prune', buildLockHeld: false })).toEqual({
      outcome: 'drop',
      changes: [
        { kind: 'retire', generation: v('v1.2') },
        { kind: 'retire', generation: v('v2.2') },
      ],
      generations: [gen('v1.1', 'retired'), gen('v1.2', 'previous'), gen('v2.2', 'held')],
    })
  })

  it('drops an interrupted build too when the caller holds its build lock', () => {
    expect(when(registry, { type: 'prune', buildLockHeld: true })).toMatchObject({
      generations: [gen('v1.1', 'retired'), gen('v1.2', 'previous'), gen('v2.2', 'held'), gen('v2.3', 'building')],
    })
  })
})

describe('followed generations', () => {
  it('are those of the code version that are live, held or previous, live first', () => {
    const generations = [gen('v1.1', 'previous'), gen('v2.1', 'previous'), gen('v2.2', 'held'), gen('v2.3', 'live'), gen('v2.4', 'building'), gen('v2.5', 'retired')]
    expect(followedGenerations(2, generations)).toEqual([gen('v2.3', 'live'), gen('v2.1', 'previous'), gen('v2.2', 'held')])
  })
})
