// Inbox gauge for /metrics (SPEC §8): provider events waiting for the worker.
import { sql } from 'kysely';
import type { DatabaseGauge } from '../observability/metrics.ts';

/** `billing_provider_events_due`: inbox rows due for (re)processing by the worker. */
export const dueProviderEvents: DatabaseGauge = {
  name: 'billing_provider_events_due',
  help: 'Provider events stored but not processed yet whose (re)processing is due now.',
  collect: async ({ db, clock }) => {
    const row = await db
      .selectFrom('provider_events')
      .select(sql<number>`count(*)`.as('n'))
      .where('next_attempt_at', '<=', clock.now().toISOString())
      .executeTakeFirst();
    return [{ value: Number(row?.n ?? 0) }];
  },
};
