import { inject } from 'vitest'
import { startClustersFrom } from '../../src/db/pglite.ts'

// Set up before every spec file (vitest.config.ts `setupFiles`): PGlite clusters opened by the spec
// start from the fresh cluster made once by test/support/global-setup.ts.
startClustersFrom(inject('pgliteTemplate'))
