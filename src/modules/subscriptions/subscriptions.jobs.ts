// The subscription lifecycle's time-based work (SPEC §4, §7): expire `incomplete`, mark
// unpaid renewals `past_due`, apply period-end cancellations. Each job claims a small
// batch of due rows (SKIP LOCKED on PostgreSQL) and moves them in that same transaction,
// so no row is handled twice at once and a crash rolls the whole batch back for a retry.
import type { Transaction } from 'kysely';
import type { Database } from '../../db/database.ts';
import { claimRows } from '../../db/locking.ts';
import type { Job } from '../job.ts';
import { openOrCountDunningCase } from '../dunning/dunning.cases.ts';
import { planPrice } from './subscriptions.payments.ts';
import { transitionSubscription } from './subscriptions.lifecycle.ts';
import type { SubscriptionRow } from './subscriptions.table.ts';

const BATCH_SIZE = 50;

async function claimDue(
  trx: Transaction<Database>,
  where: (query: ReturnType<typeof base>) => ReturnType<typeof base>,
): Promise<SubscriptionRow[]> {
  return claimRows(where(base(trx)).limit(BATCH_SIZE), trx).execute();
}

function base(trx: Transaction<Database>) {
  return trx.selectFrom('subscriptions').selectAll();
}

/** `incomplete` with no payment for SUBSCRIPTION_INCOMPLETE_TTL → `incomplete_expired`. */
export const expireIncompleteSubscriptions: Job = {
  name: 'expire_incomplete_subscriptions',
  batchSize: BATCH_SIZE,
  run: ({ db, clock, config }) =>
    db.transaction().execute(async (trx) => {
      const now = clock.now();
      const cutoff = new Date(now.getTime() - config.subscriptionIncompleteTtlMs).toISOString();
      const rows = await claimDue(trx, (q) =>
        q.where('status', '=', 'incomplete').where('created_at', '<=', cutoff).orderBy('created_at'),
      );
      for (const row of rows) {
        await transitionSubscription(trx, clock, row, 'incomplete_expired', {
          ended_at: now.toISOString(),
          cancellation_reason: 'incomplete_expired',
        });
      }
      return rows.length;
    }),
};

/**
 * `active`/`trialing` whose period (or trial) ended RENEWAL_GRACE ago without a payment
 * → `past_due`, with a dunning case (reason `renewal_unpaid`, owing the plan's price; SPEC §4).
 * Subscriptions flagged to cancel at period end are left to that job.
 */
export const markUnpaidRenewalsPastDue: Job = {
  name: 'mark_unpaid_renewals_past_due',
  batchSize: BATCH_SIZE,
  run: (deps) =>
    deps.db.transaction().execute(async (trx) => {
      const { clock, config } = deps;
      const cutoff = new Date(clock.now().getTime() - config.renewalGraceMs).toISOString();
      const rows = await claimDue(trx, (q) =>
        q
          .where('status', 'in', ['active', 'trialing'])
          .where('current_period_end', '<=', cutoff)
          .where('cancel_at_period_end', '=', false)
          .orderBy('current_period_end'),
      );
      for (const row of rows) {
        await transitionSubscription(trx, clock, row, 'renewal_unpaid');
        const price = await planPrice(trx, row.plan_id);
        await openOrCountDunningCase(trx, deps, row, {
          reason: 'renewal_unpaid',
          paymentId: null,
          amountDue: price.amount,
          currency: price.currency,
        });
      }
      return rows.length;
    }),
};

/** Flagged `active`/`trialing` subscriptions reaching `current_period_end` → `cancelled`. */
export const applyPeriodEndCancellations: Job = {
  name: 'apply_period_end_cancellations',
  batchSize: BATCH_SIZE,
  run: ({ db, clock }) =>
    db.transaction().execute(async (trx) => {
      const now = clock.now().toISOString();
      const rows = await claimDue(trx, (q) =>
        q
          .where('status', 'in', ['active', 'trialing'])
          .where('cancel_at_period_end', '=', true)
          .where('current_period_end', '<=', now)
          .orderBy('current_period_end'),
      );
      for (const row of rows) {
        await transitionSubscription(trx, clock, row, 'period_end_cancel', {
          cancel_at_period_end: false,
          ended_at: row.current_period_end,
        });
      }
      return rows.length;
    }),
};
