// Every gauge read from the database at scrape time, in one list (like routes and jobs).
// A module adds one: a DatabaseGauge in its own folder plus a line here.
import { sql } from 'kysely';
import { dunningActionsDue, dunningCasesByStatus } from './modules/dunning/dunning.gauges.ts';
import { dueProviderEvents } from './inbox/inbox.gauges.ts';
import { dueDeliveries, pendingDeliveries } from './modules/webhooks/webhooks.gauges.ts';
import { readAllCounts } from './db/counts.ts';
import { countRowFailures } from './db/row-failures.ts';
import type { DatabaseGauge } from './observability/metrics.ts';

/** Exact totals the service keeps beside its big lists (customers, events, subscriptions…). */
const rowTotals: DatabaseGauge = {
  name: 'billing_rows',
  help: 'Rows per table, from the exact totals kept beside the lists.',
  labelNames: ['table'],
  collect: async ({ db }) => {
    const totals = await readAllCounts(db);
    return [...totals].map(([table, value]) => ({ labels: { table }, value }));
  },
};

/** Idempotency keys past their 24 h that the worker has not purged yet (should stay near 0). */
const expiredIdempotencyKeys: DatabaseGauge = {
  name: 'billing_idempotency_keys_expired',
  help: 'Idempotency keys past their 24 h, waiting for the purge job.',
  collect: async ({ db, clock }) => {
    const row = await db
      .selectFrom('idempotency_keys')
      .select(sql<number>`count(*)`.as('n'))
      .where('expires_at', '<=', clock.now().toISOString())
      .executeTakeFirst();
    return [{ value: Number(row?.n ?? 0) }];
  },
};

/**
 * Rows of worker batches whose last run failed alone (db/row-failures.ts): a renewal, a charge
 * claim, a dunning step… waiting for its retry. Should stay 0; the log says which and why.
 */
const workerRowFailures: DatabaseGauge = {
  name: 'billing_worker_row_failures',
  help: 'Rows a worker job failed on (rolled back alone, retried after a backoff), by job.',
  labelNames: ['job'],
  collect: async ({ db }) => {
    const counts = await countRowFailures(db);
    return [...counts].map(([job, value]) => ({ labels: { job }, value }));
  },
};

export const DATABASE_GAUGES: readonly DatabaseGauge[] = [
  rowTotals,
  expiredIdempotencyKeys,
  pendingDeliveries,
  dueDeliveries,
  dueProviderEvents,
  dunningCasesByStatus,
  dunningActionsDue,
  workerRowFailures,
];
