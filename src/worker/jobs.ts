// Every job the worker runs, in one list: the only place that names every module's jobs.
// A new kind of due work is a Job (job.ts) in a worker/<name>.jobs.ts file plus a line here.
import { FOLD_BATCH, foldCountDeltas } from '../db/counts.ts';
import { resolveUnknownRefunds } from './refunds.jobs.ts';
import { chargeInvoices } from './charges.jobs.ts';
import { runDunningSchedule } from './dunning.jobs.ts';
import { purgeIdempotencyKeys } from './idempotency.jobs.ts';
import { finalizeInvoices } from './invoices.jobs.ts';
import type { Job, WorkerService } from './job.ts';
import { retryProviderEvents } from './provider-events.jobs.ts';
import {
  applyPeriodEndCancellations,
  expireIncompleteSubscriptions,
  issueRenewalInvoices,
  markUnpaidRenewalsPastDue,
} from './subscriptions.jobs.ts';
import { advanceTestClocks } from './test-clocks.jobs.ts';
import { purgeUsageEventKeys } from './usage.jobs.ts';
import { webhookDeliveryService } from './webhook-dispatcher.ts';

/** Folds PostgreSQL's appended count deltas into the exact list totals (db/counts.ts). */
const foldCountDeltasJob: Job = {
  name: 'fold_count_deltas',
  batchSize: FOLD_BATCH,
  run: ({ db }) => foldCountDeltas(db),
  // SQLite keeps no deltas (foldCountDeltas does nothing there).
  dueNow: ({ db, database }) =>
    database.dialect === 'postgres' ? db.selectFrom('row_count_deltas').select('id') : null,
  // Deltas are written with the events of the same change: the outbox doorbell wakes the worker.
  wakeAt: () => Promise.resolve(null),
};

/**
 * The jobs over customers' rows, in the order they run at one instant: each filters its rows
 * by JobScope and has `nextDueAt` (job.ts), so a test clock's advance runs exactly
 * these, for its own rows, at its own time (SPEC §11).
 */
export const CLOCK_AWARE_JOBS: readonly Job[] = [
  expireIncompleteSubscriptions,
  applyPeriodEndCancellations,
  // Before the past-due job: one tick issues a renewal invoice, and a later one finds it overdue.
  issueRenewalInvoices,
  // After issuing, before charging: a draft finalized in a tick is charged in the same tick.
  finalizeInvoices,
  // Before charging: a dunning step's retry (SPEC §10 "Dunning retries") is charged in the same tick.
  runDunningSchedule,
  // Right after issuing: a renewal invoice of a customer with a saved method is charged in the same tick.
  chargeInvoices,
  markUnpaidRenewalsPastDue,
  resolveUnknownRefunds,
];

export const JOBS: readonly Job[] = [
  ...CLOCK_AWARE_JOBS,
  advanceTestClocks(CLOCK_AWARE_JOBS),
  retryProviderEvents,
  purgeIdempotencyKeys,
  purgeUsageEventKeys,
  foldCountDeltasJob,
];

/** Long-running parts of the worker, started and drained with it (see runner.ts). */
export const SERVICES: readonly WorkerService[] = [webhookDeliveryService];
