// What a subscription request means (SPEC §3, §4): create (with its first invoice), cancel,
// pause, resume. Status changes go through the record's lifecycle
// (modules/subscriptions/subscriptions.lifecycle.ts); reads are the record's own.
import { closeOpenCase } from '../modules/dunning/dunning.cases.ts';
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../db/database.ts';
import { transactionWithRetry } from '../db/transaction.ts';
import { AppError, NotFoundError, StateConflictError } from '../http/errors.ts';
import type { Clock } from '../shared/clock.ts';
import { newId } from '../shared/ids.ts';
import { lockCustomer } from '../modules/customers/customers.service.ts';
import { type InvoiceContext, voidDraftsOfSubscription } from '../modules/invoices/invoices.lifecycle.ts';
import { toSafeAmount } from './compose/rounding.ts';
import { issueFinalUsageInvoice, issueFirstPeriodInvoice } from './issue.ts';
import { releaseBilledUsage } from './usage-billing.ts';
import { asksForDiscount, redeemDiscount } from './coupons.ts';
import { findPlan } from '../modules/plans/plans.service.ts';
import { findDiscount, toDiscount } from '../modules/coupons/coupons.discounts.ts';
import { getSubscription } from '../modules/subscriptions/subscriptions.service.ts';
import { nextPeriodOnAnchor } from '../modules/subscriptions/subscriptions.billing-period.ts';
import {
  ForbiddenTransitionError,
  insertSubscription,
  lockSubscription,
  type Subscription,
  toSubscription,
  transitionSubscription,
} from '../modules/subscriptions/subscriptions.lifecycle.ts';
import type {
  CancelInput,
  CreateSubscriptionInput,
  SubscriptionDetail,
} from '../modules/subscriptions/subscriptions.schemas.ts';
import type { SubscriptionRow } from '../db/tables/subscriptions.table.ts';
import { releasePendingItems } from '../modules/subscriptions/subscriptions.pending-items.ts';
import { clockFor, withClockFor } from '../modules/test-clocks/test-clocks.time.ts';
import { checkAttachableTaxRates } from '../modules/tax-rates/tax-rates.service.ts';

export type { CancelInput, CreateSubscriptionInput };

const DAY_MS = 86_400_000;

/** The exact 409 body text for a cancel the state forbids (SPEC §2). */
export const CANNOT_CANCEL = 'subscription cannot be cancelled in its current state';

/**
 * Creates a subscription: `trialing` when trial days (from the request, else the plan) are
 * above 0, else `incomplete` awaiting its first payment. Emits `subscription.created`. Its
 * billing cycle anchor is the trial's end, else its creation (SPEC §4). An `incomplete` one
 * is in its first period `[created_at, +interval]` from the start and gets that period's
 * invoice in the same transaction (SPEC §9, through issue.ts: the customer's credit applied),
 * due at once (`invoice.created`) — the invoice the first payment settles (one that owes
 * nothing is paid at once and the subscription is `active`: `subscription.updated`); a trial gets none
 * until it ends (the renewal job issues it). With `coupon` or `promotion_code` the discount is
 * redeemed in the same transaction, before the first invoice (billing/coupons.ts; its 400s
 * change nothing); the response is the subscription as `subscription.created` carries it, its
 * discount shown by GET one. `ctx` is the clock and the invoice settings (Deps fits). Throws 404 naming
 * an unknown (or deleted) customer or plan, 422 `invalid_state` for an archived plan, 400 for
 * `tax_rate_ids` naming a tax rate that does not exist or is archived (SPEC §14).
 */
export async function createSubscription(
  db: Kysely<Database>,
  apiCtx: InvoiceContext,
  input: CreateSubscriptionInput,
): Promise<Subscription> {
  return transactionWithRetry(db, async (trx) => {
    // Locked, not just read: a concurrent delete of the customer either commits first (and
    // this is 404) or waits for this commit and then sees the live subscription (409).
    const customer = await lockCustomer(trx, input.customer_id);
    const ctx = await withClockFor(trx, apiCtx, customer.test_clock_id);
    const { clock } = ctx;
    const plan = await findPlan(trx, input.plan_id);
    if (!plan) throw new NotFoundError('plan', input.plan_id);
    if (!plan.active) throw new AppError('invalid_state', `plan ${plan.id} is archived and takes no new subscriptions`);
    await checkAttachableTaxRates(trx, input.tax_rate_ids ?? [], 'tax_rate_ids');

    const quantity = input.quantity ?? 1;
    // Refused now, not at the trial's end: each period bills price × quantity (SPEC §13).
    toSafeAmount(BigInt(plan.amount) * BigInt(quantity), `${plan.name} × ${quantity}`);
    const now = clock.now();
    const trialDays = input.trial_period_days ?? plan.trial_period_days;
    const trialEnd = trialDays > 0 ? new Date(now.getTime() + trialDays * DAY_MS).toISOString() : null;
    // The periods are counted from the trial's end, else from now (SPEC §4 "Billing cycle anchor").
    const anchor = trialEnd ?? now.toISOString();
    const first = trialEnd
      ? null
      : nextPeriodOnAnchor({ anchor: now, after: now, interval: plan.interval, intervalCount: plan.interval_count });
    const row: SubscriptionRow = {
      id: newId('subscription'),
      customer_id: customer.id,
      test_clock_id: customer.test_clock_id,
      plan_id: plan.id,
      status: trialEnd ? 'trialing' : 'incomplete',
      current_period_start: now.toISOString(),
      current_period_end: trialEnd ?? first!.end.toISOString(),
      trial_end: trialEnd,
      billing_cycle_anchor: anchor,
      quantity,
      pending_plan_id: null,
      pending_quantity: null,
      pending_effective_at: null,
      cancel_at_period_end: false,
      cancelled_at: null,
      ended_at: null,
      cancellation_reason: null,
      cancellation_comment: null,
      metadata: JSON.stringify(input.metadata ?? {}),
      tax_rate_ids: JSON.stringify(input.tax_rate_ids ?? []),
      created_at: now.toISOString(),
      updated_at: now.toISOString(),
      last_payment_succeeded_at: null,
      last_payment_failed_at: null,
    };
    const subscription = await insertSubscription(trx, clock, row);
    // Before the first invoice, which takes it.
    if (asksForDiscount(input)) {
      await redeemDiscount(trx, clock, input, { customer, subscription: { id: row.id, plan, quantity } });
    }
    if (!first) return subscription;
    const { invoice } = await issueFirstPeriodInvoice(trx, ctx, row, plan, first);
    // Nothing to pay (a free or purely metered plan, or credit covering it): no payment will
    // ever come, so the paid first invoice activates it now, as a paid renewal does.
    if (invoice.status !== 'paid') return subscription;
    return transitionSubscription(trx, clock, row, 'payment_succeeded');
  });
}

/**
 * Voids the subscription's drafts (a period not served, SPEC §12) and puts the proration
 * items and the usage they took back to wait for its next invoice (SPEC §13, §15): they bill
 * time and usage already used.
 */
async function voidUnsentDrafts(trx: Transaction<Database>, ctx: InvoiceContext, row: SubscriptionRow): Promise<void> {
  const voided = await voidDraftsOfSubscription(trx, ctx, row.id);
  const ids = voided.map((invoice) => invoice.id);
  await releasePendingItems(trx, ids);
  // Their usage lines bill usage that was used: given back, billed by the next invoice with usage (SPEC §15).
  await releaseBilledUsage(trx, ctx.clock, row, ids);
}

function cannotCancel(): StateConflictError {
  return new StateConflictError(CANNOT_CANCEL);
}

/**
 * Cancels now (default: `cancelled`, `cancelled_at`/`ended_at` = now, reason `requested`,
 * emits `subscription.cancelled`, closes an open dunning case as `cancelled`, voids its drafts:
 * they bill a period that is not served) or, with `at_period_end`, flags the subscription so the
 * worker cancels it at `current_period_end` (only from `trialing`/`active`; emits
 * `subscription.updated`). Throws 404 for unknown ids; 409 `validation_error` with
 * CANNOT_CANCEL when the state forbids it — nothing changes then.
 */
export async function cancelSubscription(
  db: Kysely<Database>,
  apiCtx: InvoiceContext,
  id: string,
  input: CancelInput,
): Promise<Subscription> {
  return transactionWithRetry(db, async (trx) => {
    const row = await lockSubscription(trx, id);
    const ctx = await withClockFor(trx, apiCtx, row.test_clock_id);
    const { clock } = ctx;
    const now = clock.now().toISOString();
    const comment = input.comment ?? row.cancellation_comment;
    try {
      if (input.at_period_end) {
        // Asking again changes nothing, unless it brings a new comment.
        if (row.cancel_at_period_end && comment === row.cancellation_comment) return toSubscription(row);
        return await transitionSubscription(trx, clock, row, 'schedule_cancel', {
          cancel_at_period_end: true,
          cancelled_at: row.cancelled_at ?? now,
          cancellation_reason: 'requested',
          cancellation_comment: comment,
        });
      }
      const cancelled = await transitionSubscription(trx, clock, row, 'cancel', {
        cancel_at_period_end: false,
        cancelled_at: now,
        ended_at: now,
        cancellation_reason: 'requested',
        cancellation_comment: comment,
      });
      await closeOpenCase(trx, clock, id, 'cancelled');
      await voidUnsentDrafts(trx, ctx, row);
      // The usage up to now is billed on a final invoice, with what the voided drafts gave back (SPEC §15).
      await issueFinalUsageInvoice(trx, ctx, row, now);
      return cancelled;
    } catch (error) {
      if (error instanceof ForbiddenTransitionError) throw cannotCancel();
      throw error;
    }
  });
}

/**
 * `active` → `paused` (no renewals, no dunning); its drafts are voided (resuming starts a new
 * period with its own invoice). `apiCtx`: the clock and invoice settings (Deps fits). Throws
 * 404; 409 `validation_error` from other states.
 */
export async function pauseSubscription(
  db: Kysely<Database>,
  apiCtx: InvoiceContext,
  id: string,
): Promise<Subscription> {
  return transactionWithRetry(db, async (trx) => {
    const row = await lockSubscription(trx, id);
    const ctx = await withClockFor(trx, apiCtx, row.test_clock_id);
    try {
      const paused = await transitionSubscription(trx, ctx.clock, row, 'pause');
      await voidUnsentDrafts(trx, ctx, row);
      return paused;
    } catch (error) {
      if (error instanceof ForbiddenTransitionError) {
        throw new StateConflictError(`subscription cannot be paused in its current state (${row.status})`);
      }
      throw error;
    }
  });
}

/**
 * `paused` → `active` with its payment due at once (the periods restart now — the billing
 * cycle anchor moves to now — so the worker issues the invoice of `[now, +interval]` and
 * marks it `past_due` after RENEWAL_GRACE unless paid); or, on a `trialing`/`active`
 * subscription flagged to cancel at period end, clears the flag. Throws 404; 409
 * `validation_error` otherwise.
 */
export async function resumeSubscription(db: Kysely<Database>, apiClock: Clock, id: string): Promise<Subscription> {
  return transactionWithRetry(db, async (trx) => {
    const row = await lockSubscription(trx, id);
    const clock = await clockFor(trx, { clock: apiClock }, row.test_clock_id);
    const now = clock.now().toISOString();
    if (row.status === 'paused') {
      // The periods restart now: the renewal job issues the first one's invoice at once.
      return transitionSubscription(trx, clock, row, 'resume', {
        billing_cycle_anchor: now,
        current_period_start: now,
        current_period_end: now,
        cancel_at_period_end: false,
        cancelled_at: null,
        cancellation_reason: null,
        cancellation_comment: null,
      });
    }
    if (row.cancel_at_period_end) {
      return transitionSubscription(trx, clock, row, 'unschedule_cancel', {
        cancel_at_period_end: false,
        cancelled_at: null,
        cancellation_reason: null,
        cancellation_comment: null,
      });
    }
    throw new StateConflictError(
      `subscription cannot be resumed in its current state (${row.status}, no pending cancellation)`,
    );
  });
}

/**
 * Subscription `id` with its own discount when it has one (GET /api/subscriptions/{id}, SPEC
 * §14; absent otherwise, so the body is the resource its events carry), the coupon's `valid`
 * as of `clock`. Throws 404 `not_found` for unknown or malformed ids.
 */
export async function getSubscriptionWithDiscount(
  db: Kysely<Database>,
  clock: Clock,
  id: string,
): Promise<SubscriptionDetail> {
  return withDiscount(db, clock, await getSubscription(db, id));
}

/**
 * `subscription` with its own discount when it has one (absent otherwise), the coupon's `valid`
 * as of `clock`: the SubscriptionDetail GET and PATCH /api/subscriptions/{id} answer (SPEC §14).
 */
export async function withDiscount(
  db: Kysely<Database> | Transaction<Database>,
  clock: Clock,
  subscription: Subscription,
): Promise<SubscriptionDetail> {
  const found = await findDiscount(db, subscription.customer_id, subscription.id);
  return found ? { ...subscription, discount: toDiscount(found.discount, found.coupon, clock.now()) } : subscription;
}
