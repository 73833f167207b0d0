// Webhook delivery gauges for /metrics (SPEC §8): the delivery queue. Both read the
// partial index on pending deliveries, so a scrape never scans delivered history.
import { sql } from 'kysely';
import type { DatabaseGauge } from '../../observability/metrics.ts';

/** `billing_webhook_deliveries_pending`: deliveries not yet succeeded (due, waiting to retry, or parked). */
export const pendingDeliveries: DatabaseGauge = {
  name: 'billing_webhook_deliveries_pending',
  help: 'Webhook deliveries that have not succeeded yet (due, waiting for a retry, or parked on a disabled endpoint).',
  collect: async ({ db }) => {
    const row = await db
      .selectFrom('webhook_deliveries')
      .select(sql<number>`count(*)`.as('n'))
      .where('status', '=', 'pending')
      .executeTakeFirst();
    return [{ value: Number(row?.n ?? 0) }];
  },
};

/** `billing_webhook_deliveries_due`: pending deliveries whose attempt is due and not leased (the backlog). */
export const dueDeliveries: DatabaseGauge = {
  name: 'billing_webhook_deliveries_due',
  help: 'Webhook deliveries due now and not held by a worker: the delivery backlog (near 0 when healthy).',
  collect: async ({ db, clock }) => {
    const now = clock.now().toISOString();
    const row = await db
      .selectFrom('webhook_deliveries')
      .select(sql<number>`count(*)`.as('n'))
      .where('status', '=', 'pending')
      .where('next_attempt_at', '<=', now)
      .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<=', now)]))
      .executeTakeFirst();
    return [{ value: Number(row?.n ?? 0) }];
  },
};
