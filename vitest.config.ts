import { defineConfig } from 'vitest/config'

/** The end-to-end smoke suite, one file per runtime (test/support/smoke.ts). */
const SMOKE = 'test/e2e/smoke-*.test.ts'

/**
 * Files that drive real server and CLI processes and assert only outcomes (answers, events, read
 * models), never how long something took: each has its own data directory, schema and ports, so two
 * of them run at once (CI time). Everything that measures time or concurrency stays in `suite`.
 */
const PROCESSES = [
  'test/e2e/briefings.test.ts',
  'test/projections/crash.test.ts',
  'test/e2e/generations.test.ts',
  'test/e2e/events.test.ts',
  'test/e2e/readme.test.ts',
  'test/operator/cli-process.test.ts',
  'test/demo/seed.test.ts',
  'test/e2e/first-run.test.ts',
  'test/operator/events-file.test.ts',
  'test/projections/replay.test.ts',
  'test/e2e/npm-start.test.ts',
  'test/e2e/access-log.test.ts',
]

export default defineConfig({
  test: {
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 120_000,
    projects: [
      {
        extends: true,
        test: {
          name: 'suite',
          include: ['test/**/*.test.ts'],
          exclude: [SMOKE, ...PROCESSES],
          // Suites share one PostgreSQL database and one Redis; files run one at a time so that
          // concurrency and timing tests measure the code under test, not each other.
          fileParallelism: false,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'processes',
          include: PROCESSES,
          // A group of their own, after the suite: two at a time, never beside a timing test.
          maxWorkers: 2,
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        test: {
          name: 'runtimes',
          include: [SMOKE],
          // A group of their own (never beside the suite), the three runtimes at once: nothing in them
          // measures time, and each has its own data directory, keys and schema.
          maxWorkers: 3,
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
})
