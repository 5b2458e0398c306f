import { expect } from 'vitest'

/** A decider as the domain exports it: pure, time and ids come in with the command. */
export type Decider<Command, Event, State> = {
  decide(command: Command, state: State): Event[]
  evolve(state: State, event: Event): State
  initialState: State
}

/** What a refused command must carry: its error code and, optionally, words of its message. */
export type Refusal = { code: string; message?: string | RegExp }

/**
 * Given/when/then for a decider, without a database:
 *
 *   specify(ownerDecider).given([registered]).when(deactivate).then([deactivated])
 *
 * `given` replays recorded events through `evolve` from the initial state, `when` decides a command
 * on that state, and the `then…` step checks what a user of the domain would see: the events
 * decided, that nothing was decided, the refusal, or the state the decided events lead to.
 */
export function specify<Command, Event, State>(decider: Decider<Command, Event, State>) {
  return {
    given(history: readonly Event[] = []) {
      const state = history.reduce(decider.evolve, decider.initialState)
      return {
        when(command: Command) {
          const decide = () => decider.decide(command, state)
          return {
            /** The events decided, exactly; or a check of them where only some of their fields matter. */
            then(expected: readonly Event[] | ((events: Event[]) => void)) {
              if (typeof expected === 'function') expected(decide())
              else expect(decide()).toEqual(expected)
            },
            thenNothing() {
              expect(decide()).toEqual([])
            },
            thenRefused(refusal: Refusal) {
              let thrown: unknown = null
              try {
                decide()
              } catch (error) {
                thrown = error
              }
              expect(thrown, 'the command was decided instead of refused').not.toBeNull()
              expect(thrown).toMatchObject({ code: refusal.code })
              if (refusal.message !== undefined) expect((thrown as Error).message).toMatch(refusal.message)
            },
            thenState(expected: State) {
              expect(decide().reduce(decider.evolve, state)).toEqual(expected)
            },
          }
        },
      }
    },
  }
}
