import { defineConfig } from 'vitest/config'

/** The end-to-end smoke suite, one file per runtime (test/support/smoke.ts). */
const SMOKE = 'test/e2e/smoke-*.test.ts'

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
          exclude: [SMOKE],
          // Suites share one PostgreSQL database and one Redis; files run one at a time so that
          // concurrency tests measure the code under test, not each other.
          fileParallelism: false,
          sequence: { groupOrder: 0 },
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
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
})
