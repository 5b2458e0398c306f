import { randomBytes } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

/** Where the embedded store keeps its own webhook signing key, readable by its owner only. */
export const signingKeyFile = (dataDir: string) => join(dataDir, 'webhook-signing.key')

/**
 * The key webhook secrets are derived from: WEBHOOK_SIGNING_KEY when set; else, for the embedded
 * store (one process, one data directory), a key made at the first start and kept in DATA_DIR
 * (mode 0600); else null: processes sharing a PostgreSQL database must share the key, so webhooks
 * stay off until it is configured rather than each process signing with a key of its own.
 */
export function webhookSigningKey(config: { webhookSigningKey: string | undefined; databaseUrl: string | undefined; dataDir: string }): string | null {
  if (config.webhookSigningKey) return config.webhookSigningKey
  if (config.databaseUrl) return null
  const file = signingKeyFile(config.dataDir)
  try {
    writeFileSync(file, `${randomBytes(48).toString('base64')}\n`, { flag: 'wx', mode: 0o600 })
  } catch (error) {
    if ((error as { code?: string }).code !== 'EEXIST') throw error
  }
  return readFileSync(file, 'utf8').trim()
}
