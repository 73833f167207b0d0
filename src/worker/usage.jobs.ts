// The worker's purge of usage duplicate-detection keys past their retention (SPEC §15
// "Duplicates": kept ≥ 35 days, the window ingestion accepts; modules/usage/usage.keys.ts).
import type { Job } from './job.ts';
import { expiredUsageKeysQuery, purgeExpiredUsageKeys } from '../modules/usage/usage.keys.ts';

const BATCH_SIZE = 1000;

/** Deletes up to 1,000 expired keys per batch; the runner repeats it while batches come back full. */
export const purgeUsageEventKeys: Job = {
  name: 'purge_usage_event_keys',
  batchSize: BATCH_SIZE,
  run: ({ db, clock }) => purgeExpiredUsageKeys(db, clock.now(), BATCH_SIZE),
  dueNow: ({ db, clock }) => expiredUsageKeysQuery(db, clock.now()),
};
