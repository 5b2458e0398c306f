import { fail } from '../shared/errors.ts'
import { parseWith } from '../shared/validate.ts'
import type { OperatorCommand, OperatorContext } from './command.ts'
import { auditKey } from './commands/audit-key.ts'
import { auditOwner } from './commands/audit-owner.ts'
import { auditQuota } from './commands/audit-quota.ts'
import { auditAnswer } from './commands/audit-answer.ts'
import { auditVerify } from './commands/audit-verify.ts'
import { demoSeed } from './commands/demo-seed.ts'
import { eventsExport } from './commands/events-export.ts'
import { eventsImport } from './commands/events-import.ts'
import { eventsImportLines } from './commands/events-import-lines.ts'
import { eventsRead } from './commands/events-read.ts'
import { ingest } from './commands/ingest.ts'
import { ingestLines } from './commands/ingest-lines.ts'
import { keyIssue } from './commands/key-issue.ts'
import { keyList } from './commands/key-list.ts'
import { keyRevoke } from './commands/key-revoke.ts'
import { keyRoll } from './commands/key-roll.ts'
import { ownerCreate } from './commands/owner-create.ts'
import { ownerActivate, ownerDeactivate } from './commands/owner-status.ts'
import { ownerSetTier } from './commands/owner-set-tier.ts'
import { projectionsDiff } from './commands/projections-diff.ts'
import { projectionsPrune } from './commands/projections-prune.ts'
import { projectionsRebuild } from './commands/projections-rebuild.ts'
import { projectionsStatus } from './commands/projections-status.ts'
import { projectionsPromote, projectionsRollback } from './commands/projections-switch.ts'

/** Every operator command, in the order `--help` lists them: the CLI's parser, help and output are built from this list. */
export const operatorCommands: readonly OperatorCommand[] = [
  ownerCreate,
  ownerSetTier,
  ownerDeactivate,
  ownerActivate,
  keyIssue,
  keyRoll,
  keyRevoke,
  keyList,
  auditKey,
  auditOwner,
  auditQuota,
  auditAnswer,
  auditVerify,
  projectionsStatus,
  projectionsRebuild,
  projectionsDiff,
  projectionsPromote,
  projectionsRollback,
  projectionsPrune,
  ingest,
  ingestLines,
  demoSeed,
  eventsExport,
  eventsImport,
  eventsRead,
  eventsImportLines,
]

const byName = new Map(operatorCommands.map((command) => [command.name, command]))

/** The command of that name, if there is one. */
export const operatorCommand = (name: string): OperatorCommand | undefined => byName.get(name)

/**
 * Validates the arguments with the command's schema and runs it where the store is: used by the
 * CLI on its own store and by the server's socket alike. Commands that run in the CLI (`ingest`,
 * which reads a file) are not run here: the CLI sends what they read.
 */
export async function runOperatorCommand(ctx: OperatorContext, name: string, args: unknown): Promise<unknown> {
  const command = byName.get(name)
  if (command?.kind !== 'store') throw fail.notFound(`unknown command "${name}"`)
  return command.run(ctx, parseWith(command.args, args, `arguments of "${name}"`) as never)
}
