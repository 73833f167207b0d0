// A subscription reaching the end of its period (SPEC §4, §9, §12): the next period on its
// billing cycle anchor begins, whether or not it is paid yet. Its invoice is issued through
// issue.ts (or found: paid in advance), and the subscription's period moves to it.
import type { Transaction } from 'kysely';
import type { Database } from '../db/database.ts';
import type { SubscriptionRow } from '../db/tables/subscriptions.table.ts';
import { closeOpenCase } from '../modules/dunning/dunning.cases.ts';
import type { InvoiceContext } from '../modules/invoices/invoices.lifecycle.ts';
import { hasDefaultPaymentMethod } from '../modules/payment-methods/payment-methods.ts';
import { findPlan } from '../modules/plans/plans.service.ts';
import { nextPeriodOnAnchor } from '../modules/subscriptions/subscriptions.billing-period.ts';
import {
  type Subscription,
  transitionSubscription,
  updateSubscription,
} from '../modules/subscriptions/subscriptions.lifecycle.ts';
import { nextStatus } from '../modules/subscriptions/subscriptions.status.ts';
import { issueRenewalInvoice } from './issue.ts';

/**
 * Renews `row` — an `active`/`trialing` subscription, locked (claimed), whose
 * `current_period_end` has passed — into its next period on the anchor (SPEC §4): the
 * period's invoice is issued, due at its start (`invoice.created`; the customer's credit
 * applied; charged by the worker at once when the customer has a saved method, SPEC §10), or
 * found when a payment in advance issued it already; then the subscription's period becomes
 * that one (`subscription.updated`). An invoice issued paid here (its credit or a free plan
 * paid it) moves the subscription as a paid invoice does (`trialing` → `active`,
 * `subscription.renewed`). Exactly once per period: the caller's claim holds the row, the
 * period moves in the same transaction, and the invoices' unique (subscription, period start)
 * is the backstop. Returns the subscription after.
 */
export async function renewSubscription(
  trx: Transaction<Database>,
  ctx: InvoiceContext,
  row: SubscriptionRow,
): Promise<Subscription> {
  const plan = await findPlan(trx, row.plan_id);
  if (!plan) throw new Error(`plan ${row.plan_id} of subscription ${row.id} is missing`);
  const period = nextPeriodOnAnchor({
    anchor: new Date(row.billing_cycle_anchor),
    after: new Date(row.current_period_end!),
    interval: plan.interval,
    intervalCount: plan.interval_count,
  });
  const charge = await hasDefaultPaymentMethod(trx, row.customer_id);
  const now = ctx.clock.now().toISOString();
  const { invoice, created } = await issueRenewalInvoice(trx, ctx, row, plan, period, charge ? now : null);
  const changes = { current_period_start: period.start.toISOString(), current_period_end: period.end.toISOString() };
  if (created && invoice.status === 'paid' && nextStatus(row.status, 'payment_succeeded')) {
    const renewed = await transitionSubscription(trx, ctx.clock, row, 'payment_succeeded', changes);
    await closeOpenCase(trx, ctx.clock, row.id, 'recovered', invoice.id);
    return renewed;
  }
  return updateSubscription(trx, ctx.clock, row, changes, 'subscription.updated');
}
