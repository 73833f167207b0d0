// How payments move subscriptions (SPEC §4). Called by the provider-events processing in
// the same transaction that records the payment.
import type { Transaction } from 'kysely';
import type { Database } from '../../db/database.ts';
import type { Clock } from '../../shared/clock.ts';
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
 * `past_due` and `unpaid` and starts or extends the period per SPEC §4. A payment for a
 * `cancelled`, `incomplete_expired` or `paused` subscription changes nothing (it is
 * recorded by the caller, but does not revive it). Returns the subscription after.
 * Throws 404 `not_found` for an unknown id.
 */
export async function applySuccessfulPayment(
  trx: Transaction<Database>,
  clock: Clock,
  id: string,
  _payment?: PaymentFacts,
): Promise<Subscription> {
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
  return transitionSubscription(trx, clock, row, 'payment_succeeded', {
    current_period_start: period.start.toISOString(),
    current_period_end: period.end.toISOString(),
  });
}

/**
 * A failed payment for subscription `id`: `active`/`trialing` → `past_due`; other states
 * are left as they are (dunning counts further failures). Returns the subscription after.
 * Throws 404 `not_found` for an unknown id.
 */
export async function applyFailedPayment(
  trx: Transaction<Database>,
  clock: Clock,
  id: string,
  _payment?: PaymentFacts,
): Promise<Subscription> {
  const row = await lockSubscription(trx, id);
  if (!nextStatus(row.status, 'payment_failed')) return toSubscription(row);
  return transitionSubscription(trx, clock, row, 'payment_failed');
}
