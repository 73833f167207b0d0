// Retention of the duplicate-detection keys (SPEC §15 "Duplicates"): a key is kept while an
// event with its transaction_id could still be accepted — the 35 days ingestion accepts, plus a
// day of margin — and purged after, in bounded batches. `usage_event_keys` is a plain table
// (not partitioned: its primary key is the customer and transaction_id, with no time in it),
// so old keys leave by batched deletes over the `received_at` index.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/database.ts';
import { claimRows } from '../../db/locking.ts';
import { MAX_EVENT_AGE_MS } from './usage.ingest.ts';

/** How long a key outlives its acceptance (ms): the 35-day window plus one day of margin. */
export const USAGE_KEY_RETENTION_MS = MAX_EVENT_AGE_MS + 24 * 60 * 60 * 1000;

/**
 * The keys due for the purge at `now` (real time): received more than USAGE_KEY_RETENTION_MS
 * before it, of customers without a test clock — a clock customer's keys were received in its
 * clock's time, not real time, so real time cannot tell when they expire; they stay (test
 * data, bounded by its clocks). Oldest first.
 */
export function expiredUsageKeysQuery(db: Kysely<Database>, now: Date) {
  const cutoff = new Date(now.getTime() - USAGE_KEY_RETENTION_MS).toISOString();
  return db
    .selectFrom('usage_event_keys')
    .select(['usage_event_keys.customer_id', 'usage_event_keys.transaction_id'])
    .where('usage_event_keys.received_at', '<', cutoff)
    .where(({ exists, selectFrom, not }) =>
      not(
        exists(
          selectFrom('customers')
            .select('customers.id')
            .whereRef('customers.id', '=', 'usage_event_keys.customer_id')
            .where('customers.test_clock_id', 'is not', null),
        ),
      ),
    )
    .orderBy('usage_event_keys.received_at');
}

/**
 * Deletes up to `limit` keys expired at `now` (expiredUsageKeysQuery) in one transaction;
 * returns how many. On PostgreSQL they are picked with SKIP LOCKED, so workers purging at
 * once never wait on each other; an ingestion racing on a key being deleted either sees it
 * (duplicate) or claims it anew after — its event is older than the window and refused anyway.
 */
export async function purgeExpiredUsageKeys(db: Kysely<Database>, now: Date, limit: number): Promise<number> {
  return db.transaction().execute(async (trx) => {
    const due = await claimRows(expiredUsageKeysQuery(trx, now).limit(limit), trx).execute();
    if (due.length === 0) return 0;
    await trx
      .deleteFrom('usage_event_keys')
      .where((eb) =>
        eb(
          eb.refTuple('customer_id', 'transaction_id'),
          'in',
          due.map((row) => eb.tuple(row.customer_id, row.transaction_id)),
        ),
      )
      .execute();
    return due.length;
  });
}
