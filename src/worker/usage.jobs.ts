// The worker's purge of usage duplicate-detection keys past their retention (SPEC §15
// "Duplicates": kept ≥ 35 days, the window ingestion accepts; modules/usage/usage.keys.ts).
import type { Job } from './job.ts';
import { earliest } from '../db/scope.ts';
import { expiredUsageKeysQuery, purgeExpiredUsageKeys, USAGE_KEY_RETENTION_MS } from '../modules/usage/usage.keys.ts';

const BATCH_SIZE = 1000;

/** Deletes up to 1,000 expired keys per batch; the runner repeats it while batches come back full. */
export const purgeUsageEventKeys: Job = {
  name: 'purge_usage_event_keys',
  batchSize: BATCH_SIZE,
  run: ({ db, clock }) => purgeExpiredUsageKeys(db, clock.now(), BATCH_SIZE),
  dueNow: ({ db, clock }) => expiredUsageKeysQuery(db, clock.now()),
  // The oldest key not yet due passing its retention (test clocks' keys included: at worst an early wake-up).
  wakeAt: async ({ db }, after) => {
    const row = await db
      .selectFrom('usage_event_keys')
      .select((eb) => eb.fn.min('received_at').as('received'))
      .where('received_at', '>=', new Date(after.getTime() - USAGE_KEY_RETENTION_MS).toISOString())
      .executeTakeFirst();
    const received = earliest([row?.received]);
    return received && new Date(Math.max(received.getTime() + USAGE_KEY_RETENTION_MS, after.getTime() + 1));
  },
};
