// How payments move subscriptions (SPEC §4) and their dunning cases (SPEC §4). Called by the
// provider-events processing in the same transaction that records the payment. Reports may
// arrive in any order: the status follows the latest report by provider time (SPEC §5
// stale reports), while every successful payment still buys its period.
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
  updateSubscription,
} from './subscriptions.lifecycle.ts';
import type { SubscriptionRow } from './subscriptions.table.ts';

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
  /**
   * ISO 8601: when the provider says the payment succeeded or failed. Orders reports that
   * arrive out of order (stale reports); without it the report is taken as the newest.
   */
  occurredAt?: string;
}

type PaymentTime = 'last_payment_succeeded_at' | 'last_payment_failed_at';

type Time = string | null | undefined;

/** True when ISO 8601 times `a` and `b` are both known and `a` is before `b`. */
function isBefore(a: Time, b: Time): boolean {
  return typeof a === 'string' && typeof b === 'string' && Date.parse(a) < Date.parse(b);
}

/** True when ISO 8601 times `a` and `b` are both known and `a` is not after `b`. */
function isNotAfter(a: Time, b: Time): boolean {
  return typeof a === 'string' && typeof b === 'string' && Date.parse(a) <= Date.parse(b);
}

/**
 * True when the latest failure applied to `row` is newer than a success that happened at
 * `at` and than every success applied: the status is the failure's, and stays so.
 */
function failureStands(row: SubscriptionRow, at: Time): boolean {
  const failedAt = row.last_payment_failed_at;
  return isBefore(at, failedAt) && !isNotAfter(failedAt, row.last_payment_succeeded_at);
}

/**
 * Remembers `at` as the subscription's latest successful or failed payment applied, unless
 * a later one is remembered already. Internal bookkeeping: no event, `updated_at` stays.
 */
async function rememberPaymentTime(
  trx: Transaction<Database>,
  row: SubscriptionRow,
  column: PaymentTime,
  at: string | undefined,
): Promise<void> {
  if (at === undefined || isNotAfter(at, row[column])) return;
  await trx.updateTable('subscriptions').set(column, at).where('id', '=', row.id).execute();
}

/**
 * A successful payment for subscription `id`: activates `incomplete`, `trialing`,
 * `past_due` and `unpaid` and starts or extends the period per SPEC §4, and recovers an
 * open dunning case (`dunning.recovered`). A payment for a `cancelled`,
 * `incomplete_expired` or `paused` subscription changes nothing (it is recorded by the
 * caller, but does not revive it). A success older (`payment.occurredAt`) than the latest
 * failure applied, when that failure is the latest report, still buys its period — money buys time, so the number of periods paid
 * is the number of successful payments whatever the order — but moves neither the status
 * nor the dunning case (`subscription.updated`): the newer failure stands. On a tie the
 * success wins. `ctx` is the clock and config (Deps fits). Returns the subscription after.
 * Throws 404 `not_found` for an unknown id.
 */
export async function applySuccessfulPayment(
  trx: Transaction<Database>,
  ctx: DunningContext,
  id: string,
  payment?: PaymentFacts,
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
  const periodPaid = {
    current_period_start: period.start.toISOString(),
    current_period_end: period.end.toISOString(),
  };
  const stale = failureStands(row, payment?.occurredAt);
  await rememberPaymentTime(trx, row, 'last_payment_succeeded_at', payment?.occurredAt);
  if (stale) return updateSubscription(trx, clock, row, periodPaid, 'subscription.updated');
  const subscription = await transitionSubscription(trx, clock, row, 'payment_succeeded', periodPaid);
  await closeOpenCase(trx, clock, id, 'recovered');
  return subscription;
}

/**
 * A failed payment for subscription `id`: `active`/`trialing` → `past_due`. A `past_due`
 * subscription then has a dunning case: opened (`dunning.started`, reason
 * `payment_failed`, owing the payment's amount — the plan's when `payment` is not given),
 * or, when one is open, counted as one more attempt. Other states are left as they are
 * (no dunning while `paused`; `unpaid` has exhausted its dunning; `incomplete` expires).
 * A stale failure — `payment.occurredAt` no later than the latest successful payment
 * applied (SPEC §5) — changes nothing: that period is paid. `ctx` is the clock and config
 * (Deps fits). Returns the subscription after. Throws 404 `not_found` for an unknown id.
 */
export async function applyFailedPayment(
  trx: Transaction<Database>,
  ctx: DunningContext,
  id: string,
  payment?: PaymentFacts,
): Promise<Subscription> {
  const row = await lockSubscription(trx, id);
  if (isNotAfter(payment?.occurredAt, row.last_payment_succeeded_at)) return toSubscription(row);
  const subscription = nextStatus(row.status, 'payment_failed')
    ? await transitionSubscription(trx, ctx.clock, row, 'payment_failed')
    : toSubscription(row);
  if (subscription.status !== 'past_due') return subscription;
  // Only a failure that holds the subscription past_due orders later successes.
  await rememberPaymentTime(trx, row, 'last_payment_failed_at', payment?.occurredAt);
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
