import { QUOTA_CATEGORY } from '../../src/domain/briefings/events.ts'
import { type Projection, sql } from '../engine/projection.ts'
import { onCharge } from './charges.ts'

/**
 * The 24-hour briefing cache, one row per cache key: the newest generated briefing for it.
 * Rows whose expiry is at or before a new generation's time are dropped as that event is
 * applied, so the table holds about a day of briefings; only event times are used, never the clock.
 */
export const briefingCacheProjection: Projection<'cache'> = {
  name: 'briefing_cache',
  version: 1,
  categories: [QUOTA_CATEGORY],
  tables: { cache: 'briefing_cache' },
  schema: (t) => [
    `create table if not exists ${t.cache} (
      cache_key text primary key,
      briefing_id text not null,
      persona text not null,
      verdict text not null,
      confidence text not null,
      headline text not null,
      body_md text not null,
      writer text not null,
      model text not null,
      generated_at timestamptz not null,
      expires_at timestamptz not null,
      position bigint not null
    )`,
  ],
  indexes: (t) => [`create index if not exists ${t.cache}_expires on ${t.cache} (expires_at)`],
  apply: onCharge((charge, event, t) => [
    sql(`delete from ${t.cache} where expires_at <= $1`, charge.at),
    sql(
      `insert into ${t.cache}
         (cache_key, briefing_id, persona, verdict, confidence, headline, body_md, writer, model, generated_at, expires_at, position)
       values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
       on conflict (cache_key) do update set
         briefing_id = excluded.briefing_id, persona = excluded.persona, verdict = excluded.verdict,
         confidence = excluded.confidence, headline = excluded.headline, body_md = excluded.body_md,
         writer = excluded.writer, model = excluded.model, generated_at = excluded.generated_at,
         expires_at = excluded.expires_at, position = excluded.position
       where ${t.cache}.generated_at <= excluded.generated_at`,
      charge.cache_key,
      charge.briefing_id,
      charge.persona,
      charge.result.verdict,
      charge.result.confidence,
      charge.result.headline,
      charge.result.body_md,
      charge.writer,
      charge.model,
      charge.at,
      charge.expires_at,
      event.position,
    ),
  ]),
}
