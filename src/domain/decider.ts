/**
 * An aggregate's decisions, pure: `decide` turns a command and the state its stream's events lead
 * to into new events (or refuses with an AppError), `evolve` folds an event into the state,
 * starting from `initialState`; `is` tells this aggregate's events among recorded ones. Time, ids
 * and everything else the decision needs come in with the command: the shell loads and appends.
 */
export type Decider<Command, Event extends { type: string }, State> = {
  decide(command: Command, state: State): Event[]
  evolve(state: State, event: Event): State
  initialState: State
  is(event: { type: string }): event is Event
}
