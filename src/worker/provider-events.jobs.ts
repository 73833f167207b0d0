// The worker's share of SPEC §5: inbox rows whose processing failed (or whose request died
// between storing and processing) are processed again once `next_attempt_at` has come,
// with backoff (inbox/inbox.retry-backoff.ts). Claims take a lease first, so two workers never
// process one row at once and a crashed worker's rows come due again.
import type { Deps } from '../deps.ts';
import { claimRows } from '../db/locking.ts';
import type { Job } from './job.ts';
import { RETRIED_STATUSES } from '../inbox/inbox.status.ts';
import { processEvents } from '../inbox/inbox.batches.ts';

const BATCH_SIZE = 50;
/** How long a claimed row is the claimer's before another worker may take it. */
export const CLAIM_LEASE_MS = 5 * 60_000;

/** Claims due rows: moves their `next_attempt_at` past the lease, in one short transaction. */
async function claimDueEvents({ db, clock }: Deps): Promise<string[]> {
  return db.transaction().execute(async (trx) => {
    const now = clock.now();
    const rows = await claimRows(
      trx
        .selectFrom('provider_events')
        .select('id')
        .where('next_attempt_at', 'is not', null)
        .where('next_attempt_at', '<=', now.toISOString())
        .where('status', 'in', RETRIED_STATUSES)
        .orderBy('next_attempt_at')
        .limit(BATCH_SIZE),
      trx,
    ).execute();
    const ids = rows.map((row) => row.id);
    if (ids.length > 0) {
      await trx
        .updateTable('provider_events')
        .set({ next_attempt_at: new Date(now.getTime() + CLAIM_LEASE_MS).toISOString() })
        .where('id', 'in', ids)
        .execute();
    }
    return ids;
  });
}

/** Retries due inbox rows. PostgreSQL: one transaction per row; SQLite: one for the batch. */
export const retryProviderEvents: Job = {
  name: 'retry_provider_events',
  batchSize: BATCH_SIZE,
  async run(deps) {
    const ids = await claimDueEvents(deps);
    if (deps.database.dialect === 'postgres') {
      for (const id of ids) await processEvents(deps.db, deps, [{ id }]);
    } else if (ids.length > 0) {
      await processEvents(
        deps.db,
        deps,
        ids.map((id) => ({ id })),
      );
    }
    return ids.length;
  },
};
