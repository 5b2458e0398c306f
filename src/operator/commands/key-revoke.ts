import { Type } from '@sinclair/typebox'
import { handleCommand } from '../../eventstore/command-handler.ts'
import { type ApiKey, keyDecider, keyStream } from '../../domain/keys/key.ts'
import { param, storeCommand } from '../command.ts'
import { loadOwner } from './aggregates.ts'
import { KeyId, actor } from './params.ts'

export const keyRevoke = storeCommand({
  name: 'key revoke',
  summary: 'revoke a key: requests with it answer 401 invalid_key within a second',
  params: {
    key_id: param(KeyId, { placeholder: 'KEY_ID', help: 'the key id (key_…), from key issue or key list' }),
    actor: actor("the key's owner or an active admin"),
    reason: param(Type.Optional(Type.String({ maxLength: 500 })), { placeholder: 'TEXT', help: 'recorded with the revocation' }),
  },
  async run(ctx, a) {
    const actor = await loadOwner(ctx.store, a.actor)
    const command = { type: 'RevokeApiKey' as const, keyId: a.key_id, actor: a.actor, reason: a.reason ?? null, at: ctx.clock().toISOString(), actorState: actor }
    await handleCommand(ctx.store, keyStream(a.key_id), keyDecider, (key: ApiKey) => keyDecider.decide(command, key), ctx.random.uuid)
    return { key_id: a.key_id, status: 'revoked' }
  },
  output: (r) => `key ${r.key_id} revoked`,
})
