// The worker's purge of idempotency keys whose 24 h have passed (SPEC §2). Expired keys are
// already ignored when claiming; purging only keeps the table small.
import { earliest } from '../db/scope.ts';
import type { Job } from './job.ts';
import {
  expiredIdempotencyKeysQuery,
  purgeExpiredIdempotencyKeys,
} from '../modules/idempotency/idempotency.repository.ts';

const BATCH_SIZE = 500;

/** Deletes up to 500 expired keys per batch; the runner repeats it while batches come back full. */
export const purgeIdempotencyKeys: Job = {
  name: 'purge_idempotency_keys',
  batchSize: BATCH_SIZE,
  run: ({ db, clock }) => purgeExpiredIdempotencyKeys(db, clock.now(), BATCH_SIZE),
  dueNow: ({ db, clock }) => expiredIdempotencyKeysQuery(db, clock.now()),
  wakeAt: async ({ db }, after) => {
    const row = await db
      .selectFrom('idempotency_keys')
      .select((eb) => eb.fn.min('expires_at').as('due'))
      .where('expires_at', '>', after.toISOString())
      .executeTakeFirst();
    return earliest([row?.due]);
  },
};
