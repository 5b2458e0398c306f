import { type Static, type TObject, type TSchema, Type } from '@sinclair/typebox'
import type { ProjectionRunner } from '../../projections/engine/runner.ts'
import type { Db } from '../db/port.ts'
import type { EventStore } from '../eventstore/port.ts'
import type { Progress } from '../runtime/progress.ts'
import type { Clock, RandomSource } from '../shared/random.ts'
import type { Outcome, Send } from './outcome.ts'

/** What a command runs on, where the store is (in the server, or in the CLI's own process). */
export type OperatorContext = {
  db: Db
  store: EventStore
  runner: ProjectionRunner
  clock: Clock
  random: RandomSource
  progress: Progress
}

/**
 * What help texts may name that only the composition root knows: the read models (src/storage.ts),
 * and how the CLI was run (`npm run -s cli --`, `npx mirador`, or `bun src/cli.ts` where there is no npm).
 */
export type HelpTerms = { projections: readonly string[]; invocation: string }
export type HelpText = string | ((terms: HelpTerms) => string)

/**
 * One argument of a command: its schema, and how it is typed on the command line. The rest is read
 * from the schema: required unless `Type.Optional`, a comma-separated list if an array, a number if
 * an integer, a switch without value if a boolean. `--key-id` sets `key_id`.
 */
export type Param<S extends TSchema = TSchema> = {
  schema: S
  /** As shown in usage: `ID`, `YYYY-MM`, the allowed values; none for a switch. */
  placeholder?: string
  help: HelpText
  /** Given by position (`audit key KEY_ID`), not as a flag; an array takes every such word. */
  positional?: boolean
  /** A file path: relative paths are resolved from where the user ran the command. */
  path?: boolean
}
export type Params = Record<string, Param>
export const param = <S extends TSchema>(schema: S, cli: Omit<Param<S>, 'schema'>): Param<S> => ({ schema, ...cli })

/** The file a command reads, given by position; a relative path is the user's, not the server's. */
export const inputFile = (placeholder: string, what: string): Param<ReturnType<typeof Type.String>> =>
  param(Type.String(), { placeholder, help: `${what}, relative to where you run the command`, positional: true, path: true })

/** The arguments `run` receives, typed by the params' schemas. */
export type ArgsOf<P extends Params> = Static<TObject<{ [K in keyof P]: P[K]['schema'] }>>

/** How a command shows itself to people: `--help` is built from it, and its result printed with `output`. */
export type CommandLineFace = {
  /** One line: what the command does. */
  summary: string
  params: Params
  /** Further lines of its `--help`. */
  notes?: HelpText
  /** The result as text for people (`--json` prints the result itself). */
  output(result: never): string
  /** The command ran but refused part of its input (exit code 1). */
  partlyRefused?(result: never): boolean
  /** Where the result goes: stderr when stdout carries the command's data. */
  resultStream?(args: never): 'stdout' | 'stderr'
  /** A client flow stopped early by Ctrl-C and says so in its result (exit code 130). */
  interrupted?(result: never): boolean
  /**
   * What Ctrl-C on a store command leaves behind, said as the CLI exits: where the server runs it,
   * the command goes on there (`server`); in the CLI's own process (`here`), it stops.
   */
  onCtrlC?(args: never, where: CommandPlace): string
}

/** Where a store command runs: in the server (the CLI sent it over the socket), or in the CLI's process. */
export type CommandPlace = 'server' | 'here'

export type OperatorCommand =
  /** Runs where the store is; without `cli` only the CLI's own flows send it. */
  | { kind: 'store'; name: string; args: TObject; run(ctx: OperatorContext, args: never): Promise<unknown>; cli?: CommandLineFace }
  /** Runs in the CLI (it reads or writes a local file) and sends store commands as it goes. */
  | { kind: 'client'; name: string; args: TObject; flow(send: Send, args: never, terminal: Terminal): Promise<Outcome>; cli: CommandLineFace }

/** The terminal a client flow reports to: the progress bar, lines on stderr, and Ctrl-C (the flow stops early and says so). */
export type Terminal = { progress: Progress; warn(line: string): void; interrupted: AbortSignal }

type Face<P extends Params, R> = {
  summary: string
  params: P
  notes?: HelpText
  output(result: R): string
  partlyRefused?(result: R): boolean
  resultStream?(args: ArgsOf<P>): 'stdout' | 'stderr'
  interrupted?(result: R): boolean
  onCtrlC?(args: ArgsOf<P>, where: CommandPlace): string
}

const schemaOf = <P extends Params>(params: P) =>
  Type.Object(Object.fromEntries(Object.entries(params).map(([name, p]) => [name, p.schema]))) as TObject<{ [K in keyof P]: P[K]['schema'] }>

/** What the help and the output need of a declaration (its result and arguments typed only there). */
const faceOf = <P extends Params, R>({ summary, params, notes, output, partlyRefused, resultStream, interrupted, onCtrlC }: Face<P, R>): CommandLineFace => ({
  summary,
  params,
  notes,
  output,
  partlyRefused,
  resultStream,
  interrupted,
  onCtrlC,
})

/** An operator command on the command line that runs where the store is. */
export function storeCommand<const P extends Params, R>(
  declaration: { name: string; run(ctx: OperatorContext, args: ArgsOf<P>): Promise<R> } & Face<P, R>,
): OperatorCommand {
  return { kind: 'store', name: declaration.name, args: schemaOf(declaration.params), run: declaration.run, cli: faceOf(declaration) }
}

/** A command the CLI's flows send (`ingest lines`): not on the command line, so no help and no output. */
export function internalCommand<S extends TObject, R>(declaration: { name: string; args: S; run(ctx: OperatorContext, args: Static<S>): Promise<R> }): OperatorCommand {
  return { kind: 'store', name: declaration.name, args: declaration.args, run: declaration.run }
}

/** An operator command that runs in the CLI, reading or writing a file, and sends store commands. */
export function clientCommand<const P extends Params, R>(
  declaration: { name: string; flow(send: Send, args: ArgsOf<P>, terminal: Terminal): Promise<Outcome> } & Face<P, R>,
): OperatorCommand {
  return { kind: 'client', name: declaration.name, args: schemaOf(declaration.params), flow: declaration.flow, cli: faceOf(declaration) }
}
