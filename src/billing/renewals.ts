// A subscription reaching the end of its period (SPEC §4, §9, §12): the next period on its
// billing cycle anchor begins, whether or not it is paid yet. Its invoice is issued through
// issue.ts (or found: paid in advance), and the subscription's period moves to it.
import type { Transaction } from 'kysely';
import type { Database } from '../db/database.ts';
import type { SubscriptionRow } from '../db/tables/subscriptions.table.ts';
import { closeOpenCase } from '../modules/dunning/dunning.cases.ts';
import type { InvoiceContext } from '../modules/invoices/invoices.lifecycle.ts';
import { hasDefaultPaymentMethod } from '../modules/payment-methods/payment-methods.ts';
import {
  type Subscription,
  toSubscription,
  transitionSubscription,
  updateSubscription,
} from '../modules/subscriptions/subscriptions.lifecycle.ts';
import { markPendingItemsInvoiced, waitingPendingItems } from '../modules/subscriptions/subscriptions.pending-items.ts';
import { nextStatus } from '../modules/subscriptions/subscriptions.status.ts';
import { issueRenewalInvoice } from './issue.ts';
import { renewalTerms } from './renewal-terms.ts';
import type { InvoiceLineDraft } from './compose/types.ts';

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
 * is the backstop. A change scheduled for this period end (`pending_update`, SPEC §13) is
 * applied first (`subscription.update_applied`), once: it is cleared in the same transaction.
 * Proration items waiting for the next invoice join this one. Returns the subscription after.
 */
export async function renewSubscription(
  trx: Transaction<Database>,
  ctx: InvoiceContext,
  row: SubscriptionRow,
): Promise<Subscription> {
  const terms = await renewalTerms(trx, row);
  const { period } = terms;
  let current = row;
  if (terms.appliesPendingUpdate) {
    // The change scheduled for this period end applies first: the new period bills it (SPEC §13).
    const previous = {
      plan_id: row.plan_id,
      quantity: row.quantity,
      pending_update: toSubscription(row).pending_update,
    };
    const applied = {
      plan_id: terms.plan.id,
      quantity: terms.quantity,
      billing_cycle_anchor: terms.anchor,
      pending_plan_id: null,
      pending_quantity: null,
      pending_effective_at: null,
    };
    await updateSubscription(trx, ctx.clock, row, applied, 'subscription.update_applied', previous);
    current = { ...row, ...applied };
  }
  const charge = await hasDefaultPaymentMethod(trx, row.customer_id);
  const now = ctx.clock.now().toISOString();
  const waiting = await waitingPendingItems<InvoiceLineDraft>(trx, row.id);
  const { invoice, created } = await issueRenewalInvoice(
    trx,
    ctx,
    current,
    terms.plan,
    period,
    charge ? now : null,
    waiting.lines,
    // The period ending was on the plan before the scheduled change: its usage bills at that plan's charges.
    terms.usagePlan,
  );
  // A period paid in advance was invoiced without them: the items wait for the next invoice.
  if (created) await markPendingItemsInvoiced(trx, waiting.ids, invoice.id);
  const changes = { current_period_start: period.start.toISOString(), current_period_end: period.end.toISOString() };
  if (created && invoice.status === 'paid' && nextStatus(current.status, 'payment_succeeded')) {
    const renewed = await transitionSubscription(trx, ctx.clock, current, 'payment_succeeded', changes);
    await closeOpenCase(trx, ctx.clock, row.id, 'recovered', invoice.id);
    return renewed;
  }
  return updateSubscription(trx, ctx.clock, current, changes, 'subscription.updated');
}
