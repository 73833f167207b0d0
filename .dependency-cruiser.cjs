// The layers of src/ (ARCHITECTURE "The billing core"), checked by `npm run check`: a file
// may import only from its own folder and from folders listed BEFORE its own. An import
// that points up a layer, or sideways to a record module listed later, fails the build, so
// folders can never import each other in a circle. Tests are not layered (they drive the
// whole app). A new folder must be added here, at the height it belongs.
const LAYERS = [
  // Pure helpers, configuration, the database (tables, migrations, claims), plumbing.
  ['src/shared/'],
  ['src/config.ts'],
  ['src/db/'],
  ['src/observability/'],
  ['src/http/'],
  // Provider adapters: signatures, event parsing and API clients in our own vocabulary.
  ['src/providers/'],
  // Records: each module the only writer of its tables; a record may read a record above it here.
  ['src/modules/events/'],
  ['src/modules/test-clocks/'],
  ['src/modules/coupons/'],
  ['src/modules/tax-rates/'],
  ['src/modules/customers/'],
  // Meters, then usage events (their customers, their clocks, their meters); plans price meters.
  ['src/modules/meters/'],
  ['src/modules/usage/'],
  ['src/modules/balances/'],
  ['src/modules/plans/'],
  ['src/modules/api-keys/'],
  ['src/modules/idempotency/'],
  ['src/modules/payment-methods/'],
  ['src/modules/subscriptions/'],
  ['src/modules/payment-attempts/'],
  ['src/modules/dunning/'],
  ['src/modules/invoices/'],
  ['src/modules/payments/'],
  ['src/modules/credit-notes/'],
  // Documents read invoices, customers and credit notes (a credit note's PDF).
  ['src/modules/documents/'],
  ['src/modules/webhooks/'],
  // Customer portal links and their browser sessions (read customers).
  ['src/modules/portal-sessions/'],
  // Operator console sign-in, sessions and its audit trail (SPEC §16).
  ['src/modules/console-sessions/'],
  ['src/deps.ts'],
  // The billing core: compose, issue, settle, refund, collect.
  ['src/billing/'],
  // Entry points: the provider inbox, HTTP routes, worker jobs.
  ['src/inbox/'],
  ['src/routes/'],
  // The customer portal's pages (SPEC §16): an entry point like the routes, whose hosted-page headers it shares.
  ['src/portal/'],
  // The operator console (SPEC §16): pages over the same core the routes call.
  ['src/console/'],
  ['src/worker/'],
  // Composition and start-up.
  ['src/gauges.ts', 'src/app.ts'],
  ['src/server.ts'],
  ['src/cli/', 'src/cli.ts'],
  ['src/main.ts'],
];

const escape = (text) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
const pattern = (paths) => `^(${paths.map(escape).join('|')})`;

const upward = LAYERS.slice(0, -1).map((layer, i) => ({
  name: `layer-${layer[0].replace(/^src\//, '').replace(/\/$/, '')}`,
  comment: `${layer.join(', ')} may import only from itself and the layers listed before it in .dependency-cruiser.cjs`,
  severity: 'error',
  from: { path: pattern(layer), pathNot: '\\.test\\.ts$' },
  to: { path: pattern(LAYERS.slice(i + 1).flat()) },
}));

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    ...upward,
    {
      name: 'migrations-stand-alone',
      comment: 'A migration describes the schema as it was: it never imports live code that may change later.',
      severity: 'error',
      from: { path: '^src/db/migrations/', pathNot: '\\.test\\.ts$' },
      to: { path: '^src/', pathNot: ['^src/db/migrations/', '^src/db/column-types\\.ts$'] },
    },
    {
      name: 'no-circular',
      comment: 'Files never import each other in a circle.',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'every-folder-layered',
      comment: 'Every source file belongs to a layer listed in .dependency-cruiser.cjs.',
      severity: 'error',
      from: { path: '^src/', pathNot: [pattern(LAYERS.flat()), '\\.test\\.ts$'] },
      to: {},
    },
  ],
  options: {
    includeOnly: '^src/',
    exclude: { path: '\\.test\\.ts$' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
