import { defineConfig } from 'vitest/config'

/** The end-to-end smoke suite, one file per runtime (test/support/smoke.ts). */
const SMOKE = 'test/e2e/smoke-*.test.ts'

/**
 * Specs that start server or CLI processes (test/support/server.ts): each drives a whole server, and
 * the outage suite measures how long answers take, so they run one at a time, after the others.
 * A new spec that calls `startServer`, `server.cli` or spawns a process belongs here.
 */
export const PROCESS_SPECS = [
  'test/e2e/**/*.test.ts',
  'test/outage/outage.test.ts',
  'test/projections/crash.test.ts',
  'test/operator/cli-process.test.ts',
  'test/operator/cli-typos.test.ts',
  'test/operator/feed-line-limit.test.ts',
  'test/operator/ingest-server.test.ts',
  'test/operator/progress-process.test.ts',
  'test/security/gate.test.ts',
  'test/security/hardening.test.ts',
  'test/docs/openapi.test.ts',
  'test/docs/reference.test.ts',
  'test/webhooks/receiver.test.ts',
  'test/listings/export-budget.test.ts',
  'test/webhooks/outages.test.ts',
]

export default defineConfig({
  test: {
    pool: 'forks',
    // One fresh PGlite cluster, made once (at install, else here); every cluster a spec or its servers open starts as a copy of it.
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    projects: [
      {
        extends: true,
        test: {
          // `npm run test:fast`: everything that starts no process. Two at a time: each opens its own
          // PGlite, PostgreSQL schema (uniqueSchema) and Redis key prefix, so they cannot see each other.
          // Not isolated: a worker keeps its loaded modules from one spec to the next (the app's
          // modules load once per worker, not per spec: 139 s → 80 s), so a spec must leave no state
          // behind in a module; the files pass in any order (`--sequence.shuffle.files`).
          name: 'fast',
          include: ['test/**/*.test.ts'],
          exclude: [...PROCESS_SPECS],
          maxWorkers: 2,
          isolate: false,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'processes',
          include: PROCESS_SPECS,
          exclude: [SMOKE],
          fileParallelism: false,
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        test: {
          name: 'runtimes',
          include: [SMOKE],
          // A group of their own (never beside the others), the three runtimes at once: nothing in them
          // measures time, and each has its own data directory, keys and schema.
          maxWorkers: 3,
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
})
