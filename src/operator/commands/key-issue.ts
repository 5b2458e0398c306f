import { type Static, Type } from '@sinclair/typebox'
import { handleCommand } from '../../eventstore/command-handler.ts'
import { formatApiKey, hashApiKey, keyHint, newKeyId } from '../../domain/keys/api-key.ts'
import { type ApiKey, KeyEventSchemas, SCOPE_ALLOWS, SCOPES, keyDecider, keyStream } from '../../domain/keys/key.ts'
import { param, storeCommand } from '../command.ts'
import { loadOwner } from './aggregates.ts'
import { ownerIdParam } from './owners.ts'
import { actor } from './params.ts'

type Issued = { key: string; key_id: string; owner_id: string; scopes: string[]; hint: string; label: string | null }

/** `--scopes`: a comma-separated list of SCOPES, and what each allows. */
const scopes = param(Type.Array(Type.String(), { minItems: 1 }), {
  placeholder: `${SCOPES[0]}${SCOPES.slice(1).map((s) => `[,${s}]`).join('')}`,
  help: SCOPES.map((s) => `${s}: ${SCOPE_ALLOWS[s]}`).join('; '),
})

export const keyIssue = storeCommand({
  name: 'key issue',
  summary: 'issue an API key and print it, once',
  params: {
    owner: ownerIdParam('the owner the key belongs to (pro, enterprise or admin)'),
    scopes,
    actor: actor('an enterprise or admin owner for itself, or an active admin for a pro or enterprise owner'),
    label: param(Type.Optional(Type.String({ maxLength: 200 })), { placeholder: 'TEXT', help: 'a note shown by key list' }),
  },
  notes: 'The key is printed only this once: store it. Only its SHA-256 is kept.',
  async run(ctx, a): Promise<Issued> {
    const keyId = newKeyId(ctx.random.base62(12))
    const plaintext = formatApiKey(ctx.random.base62(32))
    const [owner, actor] = await Promise.all([loadOwner(ctx.store, a.owner), loadOwner(ctx.store, a.actor)])
    const command = {
      type: 'IssueApiKey' as const,
      keyId,
      ownerId: a.owner,
      scopes: a.scopes,
      keyHash: hashApiKey(plaintext),
      hint: keyHint(plaintext),
      label: a.label ?? null,
      actor: a.actor,
      at: ctx.clock().toISOString(),
      ownerState: owner,
      actorState: actor,
    }
    const { events } = await handleCommand(ctx.store, keyStream(keyId), keyDecider, (key: ApiKey) => keyDecider.decide(command, key), ctx.random.uuid)
    const issued = events[0]!.data as Static<typeof KeyEventSchemas.ApiKeyIssued>
    // The plaintext leaves the system here, once; it is in no event, row or log.
    return { key: plaintext, key_id: keyId, owner_id: a.owner, scopes: issued.scopes, hint: issued.hint, label: issued.label }
  },
  output: (r) =>
    [
      `API key ${r.key_id} for ${r.owner_id} (scopes ${r.scopes.join(',')}):`,
      '',
      `  ${r.key}`,
      '',
      'Store it now: it is shown only this once and cannot be retrieved later.',
    ].join('\n'),
})
