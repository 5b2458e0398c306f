/**
 * Mirador's layers, as rules (docs/architecture.md draws them). A folder is a layer; imports point
 * downward only:
 *
 *   src/shared                       bottom: errors, validation, encodings
 *   src/db, src/eventstore,          platform: ports and their adapters, runtime helpers
 *   src/ratelimit, src/runtime,
 *   src/metrics
 *   src/domain/**                    the pure domain: events, commands, deciders, vocabulary
 *   projections/engine               the projection engine: knows no read model
 *   projections/<read model>         one folder per read model: projection, queries, followers
 *   src/<feature>                    routes, operator commands, services (http, zones, listings, …)
 *   src/*.ts                         the composition root: main*.ts (one server entry per runtime), server.ts and
 *                                    server-components.ts, cli.ts, config.ts, storage.ts, read-models.ts,
 *                                    services.ts, health-monitor.ts, metrics-mapping.ts, app.ts
 *
 * `npm run lint:architecture` runs them; CI runs them through test/architecture/dependencies.test.ts.
 */
const FEATURES = '(http|health|zones|listings|briefings|webhooks|audit|demo|docs|operator)'
const PLATFORM = '(db|eventstore|ratelimit|runtime|metrics)'
const ADAPTERS = '^src/(db/(pglite|postgres)|eventstore/(sql|esdb)-[a-z-]+|ratelimit/(memory|redis)|metrics/prometheus)[.]ts$'

module.exports = {
  forbidden: [
    {
      name: 'shared-is-the-bottom',
      comment: 'src/shared is used by every layer and uses none of them.',
      severity: 'error',
      from: { path: '^src/shared/' },
      to: { path: '^(src|projections)/', pathNot: '^src/shared/' },
    },
    {
      name: 'platform-knows-no-domain',
      comment: 'Ports and adapters (databases, event store, rate limiter, runtime) know nothing of the domain, the read models or the features.',
      severity: 'error',
      from: { path: `^src/${PLATFORM}/` },
      to: { path: '^(src|projections)/', pathNot: `^src/(shared|${PLATFORM})/` },
    },
    {
      name: 'domain-is-pure',
      comment: 'The domain decides from what it is given: it imports only the domain and src/shared, and no I/O module.',
      severity: 'error',
      from: { path: '^src/domain/' },
      to: { path: '^(src|projections)/', pathNot: '^src/(domain|shared)/' },
    },
    {
      name: 'domain-does-no-io',
      comment: 'No file, network, process or timer module in the domain (hashing with node:crypto is pure).',
      severity: 'error',
      from: { path: '^src/domain/' },
      to: { dependencyTypes: ['core'], pathNot: '^(node:)?(crypto|buffer)$' },
    },
    {
      name: 'engine-knows-no-read-model',
      comment: 'The projection engine runs any projection: it imports no read model, feature or domain module; only the SQL and event store ports and src/shared.',
      severity: 'error',
      from: { path: '^projections/engine/' },
      to: { path: '^(src|projections)/', pathNot: '^(projections/engine/|src/shared/|src/db/port[.]ts$|src/eventstore/port[.]ts$)' },
    },
    {
      name: 'read-models-below-features',
      comment: 'A read model is used by routes and commands, never the other way round; it reads the domain, the engine and the ports.',
      severity: 'error',
      from: { path: '^projections/' },
      to: { path: `^src/(${FEATURES.slice(1, -1)})/|^src/[^/]+[.]ts$` },
    },
    {
      name: 'read-models-apart',
      comment: 'Each read model owns its tables: one read model never imports another (the engine is shared).',
      severity: 'error',
      from: { path: '^projections/([^/]+)/' },
      to: { path: '^projections/', pathNot: '^projections/(engine|$1)/' },
    },
    {
      name: 'nothing-imports-the-composition-root',
      comment: 'src/*.ts (main, server, cli, config, storage, read models, app…) assemble everything; nothing below imports them.',
      severity: 'error',
      from: { path: '^(src/.+/|projections/)' },
      to: { path: '^src/[^/]+[.]ts$' },
    },
    {
      name: 'adapters-chosen-in-the-composition-root',
      comment: 'Code works against ports; which adapter runs is decided from configuration in the composition root (src/storage.ts, src/server-components.ts).',
      severity: 'error',
      from: { path: '^(src/.+/|projections/)', pathNot: `^src/${PLATFORM}/` },
      to: { path: ADAPTERS },
    },
    {
      name: 'metrics-through-the-port',
      comment: 'prom-client is used by its adapter only (src/metrics/prometheus.ts); everything else reports through the Metrics port it is handed.',
      severity: 'error',
      from: { pathNot: '^src/metrics/prometheus[.]ts$' },
      to: { path: 'node_modules/prom-client/' },
    },
    {
      name: 'no-folder-cycles',
      comment: 'Folders depend on each other in one direction only.',
      severity: 'error',
      scope: 'folder',
      from: {},
      to: { circular: true },
    },
    {
      name: 'no-cycles',
      comment: 'Modules depend on each other in one direction only.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(test|bench|examples)/' },
  },
}
