import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Suites share one PostgreSQL database and one Redis; files run one at a time so that
    // concurrency tests measure the code under test, not each other.
    fileParallelism: false,
  },
})
