import { type Static, Type } from '@sinclair/typebox'
import { handleCommand, loadAggregate } from '../../eventstore/command-handler.ts'
import { formatApiKey, hashApiKey, keyHint, newKeyId } from '../../domain/keys/api-key.ts'
import { type ApiKey, KeyEventSchemas, keyDecider, keyStream } from '../../domain/keys/key.ts'
import { fail } from '../../shared/errors.ts'
import { param, storeCommand } from '../command.ts'
import { loadOwner } from './aggregates.ts'
import { KeyId, actor } from './params.ts'

const UNIT_MS = { s: 1000, m: 60_000, h: 3600_000, d: 86_400_000 } as const

/** `--grace`: `0`, or a whole number of seconds, minutes, hours or days (`90s`, `15m`, `24h`, `30d`). */
const Grace = Type.String({ pattern: '^(0|[0-9]{1,9}[smhd])$' })
const graceMs = (text: string) => (text === '0' ? 0 : Number(text.slice(0, -1)) * UNIT_MS[text.at(-1) as keyof typeof UNIT_MS])

type Rolled = {
  key: string
  key_id: string
  owner_id: string
  scopes: string[]
  hint: string
  label: string | null
  rolled_from: string
  grace_ends_at: string
}

export const keyRoll = storeCommand({
  name: 'key roll',
  summary: 'issue the successor of a key (same owner, scopes, label) and print it, once; the old key stays valid for the grace',
  params: {
    key_id: param(KeyId, { placeholder: 'KEY_ID', help: 'the key to replace (key_…), from key issue or key list' }),
    grace: param(Grace, { placeholder: 'DURATION', help: 'how long the old key keeps working: 0 (it stops at once) to 30d; e.g. 90s, 15m, 24h' }),
    actor: actor('an enterprise or admin owner for its own key, or an active admin for a pro or enterprise owner'),
  },
  notes:
    'The new key is printed only this once: store it. After the grace the old key answers 401 invalid_key in every server; ' +
    '`key revoke` on it ends the grace early. Each key counts its own hourly limit.',
  async run(ctx, a): Promise<Rolled> {
    const old = (await loadAggregate(ctx.store, keyStream(a.key_id), keyDecider)).state
    if (old.status === 'none') throw fail.notFound(`key ${a.key_id} does not exist`)
    const [owner, actor] = await Promise.all([loadOwner(ctx.store, old.ownerId), loadOwner(ctx.store, a.actor)])
    const successorKeyId = newKeyId(ctx.random.base62(12))
    const at = ctx.clock().toISOString()
    const roll = {
      type: 'RollApiKey' as const,
      keyId: a.key_id,
      successorKeyId,
      graceMs: graceMs(a.grace),
      actor: a.actor,
      at,
      ownerState: owner,
      actorState: actor,
    }
    // Owner, scopes and label are fixed at issue: the successor's come from the key as loaded.
    // Two decisions, each on its own stream: the roll first (it may be refused, or lose a race with a
    // revocation), then the successor's issue. See docs/decisions.md, "Key rotation".
    const { events: rolled } = await handleCommand(ctx.store, keyStream(a.key_id), keyDecider, (key: ApiKey) => keyDecider.decide(roll, key), ctx.random.uuid)
    const plaintext = formatApiKey(ctx.random.base62(32))
    const issue = {
      type: 'IssueApiKey' as const,
      keyId: successorKeyId,
      ownerId: old.ownerId,
      scopes: old.scopes,
      keyHash: hashApiKey(plaintext),
      hint: keyHint(plaintext),
      label: old.label,
      actor: a.actor,
      at,
      ownerState: owner,
      actorState: actor,
      rolledFrom: a.key_id,
    }
    const { events } = await handleCommand(ctx.store, keyStream(successorKeyId), keyDecider, (key: ApiKey) => keyDecider.decide(issue, key), ctx.random.uuid)
    const issued = events[0]!.data as Static<typeof KeyEventSchemas.ApiKeyIssued>
    const graceEndsAt = (rolled[0]!.data as Static<typeof KeyEventSchemas.ApiKeyRolled>).grace_ends_at
    // The plaintext leaves the system here, once; it is in no event, row or log.
    return {
      key: plaintext,
      key_id: successorKeyId,
      owner_id: old.ownerId,
      scopes: issued.scopes,
      hint: issued.hint,
      label: issued.label,
      rolled_from: a.key_id,
      grace_ends_at: graceEndsAt,
    }
  },
  output: (r) =>
    [
      `API key ${r.key_id} for ${r.owner_id} (scopes ${r.scopes.join(',')}), succeeding ${r.rolled_from}:`,
      '',
      `  ${r.key}`,
      '',
      'Store it now: it is shown only this once and cannot be retrieved later.',
      `${r.rolled_from} stays valid until ${r.grace_ends_at}, then answers 401 invalid_key.`,
    ].join('\n'),
})
