// Every job the worker runs, in one list. A new kind of due work is a Job plus a line here.
import {
  applyPeriodEndCancellations,
  expireIncompleteSubscriptions,
  markUnpaidRenewalsPastDue,
} from '../modules/subscriptions/subscriptions.jobs.ts';
import { foldCountDeltas } from '../db/counts.ts';
import { runDunningSchedule } from '../modules/dunning/dunning.jobs.ts';
import { purgeIdempotencyKeys } from '../modules/idempotency/idempotency.jobs.ts';
import { retryProviderEvents } from '../modules/provider-events/provider-events.jobs.ts';
import { webhookDeliveryService } from '../modules/webhooks/dispatcher.ts';
import type { Job, WorkerService } from './runner.ts';

export const JOBS: readonly Job[] = [
  expireIncompleteSubscriptions,
  applyPeriodEndCancellations,
  markUnpaidRenewalsPastDue,
  runDunningSchedule,
  retryProviderEvents,
  purgeIdempotencyKeys,
  foldCountDeltas,
];

/** Long-running parts of the worker, started and drained with it (see runner.ts). */
export const SERVICES: readonly WorkerService[] = [webhookDeliveryService];
