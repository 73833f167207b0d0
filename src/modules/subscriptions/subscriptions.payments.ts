// How payments move subscriptions (SPEC §4) and their dunning cases (issue 6). Called by the
// provider-events processing in the same transaction that records the payment.
import type { Transaction } from 'kysely';
import type { Database } from '../../db/database.ts';
import { closeOpenCase, type DunningContext, openOrCountDunningCase } from '../dunning/dunning.cases.ts';
import { findPlan } from '../plans/plans.service.ts';
import { periodAfterPayment } from './billing-period.ts';
import { nextStatus } from './subscription-status.ts';
import {
  lockSubscription,
  type Subscription,
  toSubscription,
  transitionSubscription,
} from './subscriptions.lifecycle.ts';

/**
 * What the payment-effect functions need to know about the payment that caused them, for
 * dunning (SPEC §4 dunning case: `payment_id`, `amount_due`, `currency`). `paymentId` is the
 * `pay_…` id of the recorded payment; `amount` is in minor units; `currency` is ISO 4217
 * upper case. Optional so lifecycle tests can call without a recorded payment.
 */
export interface PaymentFacts {
  paymentId: string | null;
  amount: number;
  currency: string;
}

/**
 * A successful payment for subscription `id`: activates `incomplete`, `trialing`,
 * `past_due` and `unpaid` and starts or extends the period per SPEC §4, and recovers an
 * open dunning case (`dunning.recovered`). A payment for a `cancelled`,
 * `incomplete_expired` or `paused` subscription changes nothing (it is recorded by the
 * caller, but does not revive it). `ctx` is the clock and config (Deps fits). Returns the
 * subscription after. Throws 404 `not_found` for an unknown id.
 */
export async function applySuccessfulPayment(
  trx: Transaction<Database>,
  ctx: DunningContext,
  id: string,
  _payment?: PaymentFacts,
): Promise<Subscription> {
  const { clock } = ctx;
  const row = await lockSubscription(trx, id);
  if (!nextStatus(row.status, 'payment_succeeded')) return toSubscription(row);
  const plan = await findPlan(trx, row.plan_id);
  if (!plan) throw new Error(`plan ${row.plan_id} of subscription ${row.id} is missing`);
  const period = periodAfterPayment({
    active: row.status === 'active',
    now: clock.now(),
    currentPeriodStart: row.current_period_start ? new Date(row.current_period_start) : null,
    currentPeriodEnd: row.current_period_end ? new Date(row.current_period_end) : null,
    interval: plan.interval,
    intervalCount: plan.interval_count,
  });
  const subscription = await transitionSubscription(trx, clock, row, 'payment_succeeded', {
    current_period_start: period.start.toISOString(),
    current_period_end: period.end.toISOString(),
  });
  await closeOpenCase(trx, clock, id, 'recovered');
  return subscription;
}

/**
 * A failed payment for subscription `id`: `active`/`trialing` → `past_due`. A `past_due`
 * subscription then has a dunning case: opened (`dunning.started`, reason
 * `payment_failed`, owing the payment's amount — the plan's when `payment` is not given),
 * or, when one is open, counted as one more attempt. Other states are left as they are
 * (no dunning while `paused`; `unpaid` has exhausted its dunning; `incomplete` expires).
 * `ctx` is the clock and config (Deps fits). Returns the subscription after. Throws 404
 * `not_found` for an unknown id.
 */
export async function applyFailedPayment(
  trx: Transaction<Database>,
  ctx: DunningContext,
  id: string,
  payment?: PaymentFacts,
): Promise<Subscription> {
  const row = await lockSubscription(trx, id);
  const subscription = nextStatus(row.status, 'payment_failed')
    ? await transitionSubscription(trx, ctx.clock, row, 'payment_failed')
    : toSubscription(row);
  if (subscription.status !== 'past_due') return subscription;
  const owed = payment ?? (await planPrice(trx, row.plan_id));
  await openOrCountDunningCase(trx, ctx, row, {
    reason: 'payment_failed',
    paymentId: payment?.paymentId ?? null,
    amountDue: owed.amount,
    currency: owed.currency,
  });
  return subscription;
}

/** The plan's price `{amount (minor units), currency}`; throws when the plan is missing. */
export async function planPrice(
  trx: Transaction<Database>,
  planId: string,
): Promise<{ amount: number; currency: string }> {
  const plan = await findPlan(trx, planId);
  if (!plan) throw new Error(`plan ${planId} is missing`);
  return { amount: plan.amount, currency: plan.currency };
}
