// Every job the worker runs, in one list. A new kind of due work is a Job plus a line here.
import {
  applyPeriodEndCancellations,
  expireIncompleteSubscriptions,
  markUnpaidRenewalsPastDue,
} from '../modules/subscriptions/subscriptions.jobs.ts';
import { runDunningSchedule } from '../modules/dunning/dunning.jobs.ts';
import type { Job } from './runner.ts';

export const JOBS: readonly Job[] = [
  expireIncompleteSubscriptions,
  applyPeriodEndCancellations,
  markUnpaidRenewalsPastDue,
  runDunningSchedule,
];
