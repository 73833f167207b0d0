// The worker's share of SPEC §5: inbox rows whose processing failed (or whose request died
// between storing and processing) are processed again once `next_attempt_at` has come,
// with backoff (inbox/inbox.retry-backoff.ts). The inbox claims them (inbox.ts
// claimDueInboxRows): a lease first, so two workers never process one row at once and a
// crashed worker's rows come due again.
import type { Job } from './job.ts';
import { claimDueInboxRows, dueInboxRowsQuery } from '../inbox/inbox.ts';
import { processEvents } from '../inbox/inbox.batches.ts';
import { RETRIED_STATUSES } from '../inbox/inbox.status.ts';
import { earliest } from '../db/scope.ts';

const BATCH_SIZE = 50;

/** Retries due inbox rows. PostgreSQL: one transaction per row; SQLite: one for the batch. */
export const retryProviderEvents: Job = {
  name: 'retry_provider_events',
  batchSize: BATCH_SIZE,
  async run(deps) {
    const ids = await claimDueInboxRows(deps.db, deps.clock, BATCH_SIZE);
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
  dueNow: (deps) => dueInboxRowsQuery(deps.db, deps.clock.now().toISOString()),
  // The next row's retry or claim lease coming due.
  wakeAt: async ({ db }, after) => {
    const row = await db
      .selectFrom('provider_events')
      .select((eb) => eb.fn.min('next_attempt_at').as('due'))
      .where('next_attempt_at', '>', after.toISOString())
      .where('status', 'in', RETRIED_STATUSES)
      .executeTakeFirst();
    return earliest([row?.due]);
  },
};
