/**
 * A process as a list of components, started in order and stopped in reverse order by one runner,
 * so that the start order and the stop order cannot drift apart (src/server-components.ts lists the
 * server's). Each component starts with what was given and the handles of the components before it,
 * and returns its own handle.
 */

/** One part of a process: `start` returns its handle, `stop` undoes the start (absent: nothing to undo). */
export type Component<Before, Name extends string, Handle> = {
  readonly name: Name
  start(before: Before): Handle | Promise<Handle>
  stop?(handle: Handle): unknown
}

type AnyComponent = Component<never, string, unknown>

/** A start that failed in `component`: the components before it were stopped again, in reverse order. */
export class StartFailed extends Error {
  constructor(
    readonly component: string,
    override readonly cause: unknown,
  ) {
    super(`${component}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause })
  }
}

/** Started components: their handles by name, and how to stop them all. */
export type Running<Handles> = {
  readonly handles: Handles
  /**
   * Stops every component in reverse start order, once (a second call waits for the first). A stop
   * that fails does not keep the ones after it running: all are stopped, then the first failure is thrown.
   */
  stop(): Promise<void>
}

/**
 * Components in start order. `Given`: what every component may use without starting it (configuration,
 * the log); `Handles`: that, and each component's handle under its name.
 */
export class Components<Given extends object, Handles extends object = Given> {
  private constructor(private readonly list: readonly AnyComponent[]) {}

  /** No component yet. */
  static given<Given extends object>(): Components<Given> {
    return new Components<Given>([])
  }

  /** This list with `component` started last (and stopped first). */
  add<Name extends string, Handle>(component: Component<Handles, Name, Handle>): Components<Given, Handles & { readonly [N in Name]: Handle }> {
    if (this.list.some(({ name }) => name === component.name)) throw new Error(`two components are named ${component.name}`)
    return new Components([...this.list, component as unknown as AnyComponent])
  }

  /** The names in start order. */
  get names(): string[] {
    return this.list.map(({ name }) => name)
  }

  /**
   * Starts each component in order. When one fails, the ones already started are stopped in reverse
   * order and `StartFailed` names the one that failed (failures of those stops are dropped: the
   * start's failure is the one to report).
   */
  async start(given: Given): Promise<Running<Handles>> {
    const handles = { ...given } as Record<string, unknown>
    const started: (() => unknown)[] = []
    const stopAll = async () => {
      const failures: unknown[] = []
      for (const stop of [...started].reverse()) await Promise.resolve().then(stop).catch((error: unknown) => failures.push(error))
      return failures
    }
    for (const component of this.list) {
      try {
        const handle = await component.start(handles as never)
        handles[component.name] = handle
        if (component.stop) started.push(() => component.stop!(handle))
      } catch (error) {
        await stopAll()
        throw new StartFailed(component.name, error)
      }
    }
    let stopping: Promise<void> | undefined
    return {
      handles: handles as Handles,
      stop: () =>
        (stopping ??= stopAll().then((failures) => {
          if (failures.length > 0) throw failures[0]
        })),
    }
  }
}
