// Invoices for tests, made the way the service's own flows make them: issueInvoice for a
// subscription's period (under its lock), transitionInvoice to mark one paid, and a dunning
// case opened for an invoice. The API has no route that creates invoices.
import { periodInvoiceInput } from '../../src/billing/compose/input.ts';
import { composeInvoice } from '../../src/billing/compose/pipeline.ts';
import { openOrCountDunningCase } from '../../src/modules/dunning/dunning.cases.ts';
import {
  type Invoice,
  issueInvoice,
  lockInvoice,
  transitionInvoice,
} from '../../src/modules/invoices/invoices.lifecycle.ts';
import { findPlan } from '../../src/modules/plans/plans.service.ts';
import { lockSubscription } from '../../src/modules/subscriptions/subscriptions.lifecycle.ts';
import type { TestApp } from './app.ts';

const MONTH_MS = 30 * 86_400_000;

/**
 * Issues the invoice of subscription `subscriptionId` for the period starting at
 * `periodStart` (default: the clock's now; ISO 8601) and lasting 30 days, due at its start,
 * with the plan's one line. Returns the invoice (the existing one if that period has one).
 */
export async function issueTestInvoice(
  app: TestApp,
  subscriptionId: string,
  options: { periodStart?: string; dueAt?: string } = {},
): Promise<Invoice> {
  const periodStart = options.periodStart ?? app.clock.now().toISOString();
  const periodEnd = new Date(Date.parse(periodStart) + MONTH_MS).toISOString();
  return app.deps.db.transaction().execute(async (trx) => {
    const subscription = await lockSubscription(trx, subscriptionId);
    const plan = (await findPlan(trx, subscription.plan_id))!;
    const { invoice } = await issueInvoice(trx, app.deps, {
      customerId: subscription.customer_id,
      subscriptionId: subscription.id,
      billingReason: 'subscription_cycle',
      currency: plan.currency,
      periodStart,
      periodEnd,
      dueAt: options.dueAt ?? periodStart,
      content: composeInvoice(
        periodInvoiceInput({
          reason: 'renewal',
          customerId: subscription.customer_id,
          subscriptionId: subscription.id,
          plan: plan,
          periodStart: periodStart,
          periodEnd: periodEnd,
        }),
      ),
    });
    return invoice;
  });
}

/** Marks invoice `id` paid in full, as settlement does (emits `invoice.paid`). */
export async function markTestInvoicePaid(app: TestApp, id: string): Promise<Invoice> {
  return app.deps.db.transaction().execute(async (trx) => {
    const row = await lockInvoice(trx, id);
    return transitionInvoice(trx, app.deps, row, 'paid', { amount_paid: row.amount_due });
  });
}

/** Opens a dunning case (reason `renewal_unpaid`) chasing `invoice`, under its subscription's lock. Returns the case. */
export async function openTestDunningCase(app: TestApp, invoice: Invoice) {
  return app.deps.db.transaction().execute(async (trx) => {
    const subscription = await lockSubscription(trx, invoice.subscription_id!);
    return openOrCountDunningCase(trx, app.deps, subscription, {
      reason: 'renewal_unpaid',
      paymentId: null,
      amountDue: invoice.amount_remaining,
      currency: invoice.currency,
      invoiceId: invoice.id,
    });
  });
}
