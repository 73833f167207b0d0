// A subscription reaching the end of its period (SPEC §4, §9, §12): the next period on its
// billing cycle anchor begins, whether or not it is paid yet. Its invoice is issued through
// issue.ts (or found: paid in advance), and the subscription's period moves to it.
import type { Transaction } from 'kysely';
import type { Database } from '../db/database.ts';
import type { SubscriptionRow } from '../db/tables/subscriptions.table.ts';
import { closeOpenCase } from '../modules/dunning/dunning.cases.ts';
import { findPeriodInvoices, type InvoiceDraft, periodKey } from '../modules/invoices/invoices.lifecycle.ts';
import { customerBalancesOf } from '../modules/balances/balances.ledger.ts';
import { parseCharges } from '../modules/plans/plans.charges.ts';
import { findPlans } from '../modules/plans/plans.service.ts';
import {
  customersWithDefaultPaymentMethod,
  hasDefaultPaymentMethod,
} from '../modules/payment-methods/payment-methods.ts';
import {
  type Subscription,
  toSubscription,
  transitionSubscription,
  updateSubscription,
  updateSubscriptionPeriods,
} from '../modules/subscriptions/subscriptions.lifecycle.ts';
import {
  markPendingItemsInvoiced,
  subscriptionsWithWaitingItems,
  waitingPendingItems,
} from '../modules/subscriptions/subscriptions.pending-items.ts';
import { nextStatus } from '../modules/subscriptions/subscriptions.status.ts';
import { invoiceDiscountsOf } from './coupons.ts';
import {
  type IssueContext,
  issuePlainRenewalInvoices,
  issueRenewalInvoice,
  plainRenewalDraft,
  taxedBy,
} from './issue.ts';
import { renewalTerms, termsOn } from './renewal-terms.ts';
import { invoiceTaxesOf } from './taxation.ts';
import { subscriptionsWithUsageRecords } from './usage-billing.ts';
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
  ctx: IssueContext,
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

/**
 * renewSubscription for a claimed batch `rows` (locked, in claim order), in a handful of
 * statements rather than ≈ 19 per row (SPEC §4, §9; docs/performance.md "The billing run"):
 * what composing needs is read for the whole batch at once (plans, saved methods, waiting
 * items, credit balances, discounts, taxes, invoices of the periods, usage records); each
 * invoice is composed alone by the same pipeline (plainRenewalDraft); the plain renewals'
 * invoices are numbered, inserted and their subscriptions' periods moved in multi-row
 * statements, with the same invoices and events renewSubscription writes. A row that needs
 * more — a scheduled change, usage to bill, credit, waiting items, an invoice of the period
 * already, a `once` discount, an invoice issued paid or as a draft, a customer met earlier in
 * the batch — is renewed by renewSubscription itself, in claim order: the plain rows before
 * it are written first, so it reads what they wrote. Returns the subscriptions after, in
 * `rows` order. Throws what renewSubscription throws (the caller reruns the batch row by row).
 */
export async function renewSubscriptions(
  trx: Transaction<Database>,
  ctx: IssueContext,
  rows: readonly SubscriptionRow[],
): Promise<Subscription[]> {
  const plans = await findPlans(
    trx,
    rows.map((row) => row.plan_id),
  );
  const now = ctx.clock.now().toISOString();
  const seen = new Set<string>();
  // Rows the batch may renew itself, before reading what only they need.
  const candidates = rows.filter((row) => {
    const plan = plans.get(row.plan_id);
    const first = !seen.has(row.customer_id);
    seen.add(row.customer_id);
    return first && plan !== undefined && row.pending_plan_id === null && parseCharges(plan.charges).length === 0;
  });
  const ids = candidates.map((row) => row.id);
  const customerIds = candidates.map((row) => row.customer_id);
  const terms = new Map(candidates.map((row) => [row.id, termsOn(row, plans.get(row.plan_id)!)]));
  const periods = candidates.map((row) => ({
    subscriptionId: row.id,
    periodStart: terms.get(row.id)!.period.start.toISOString(),
  }));
  const earliestStart = periods.reduce(
    (min, { periodStart }) => (periodStart < min ? periodStart : min),
    periods[0]?.periodStart ?? now,
  );
  const charged = await customersWithDefaultPaymentMethod(trx, customerIds);
  const waiting = await subscriptionsWithWaitingItems(trx, ids);
  const balances = await customerBalancesOf(trx, customerIds);
  const usage = await subscriptionsWithUsageRecords(trx, ids, earliestStart);
  const issued = await findPeriodInvoices(trx, periods);
  const discounts = await invoiceDiscountsOf(trx, candidates);
  const taxes = await invoiceTaxesOf(
    trx,
    candidates.map((row) => taxedBy(row, plans.get(row.plan_id)!)),
    ctx.config.defaultTaxRateIds ?? [],
  );
  const drafts = new Map<string, InvoiceDraft>();
  candidates.forEach((row, i) => {
    const plan = plans.get(row.plan_id)!;
    const { period } = terms.get(row.id)!;
    if (
      waiting.has(row.id) ||
      usage.has(row.id) ||
      (balances.get(`${row.customer_id} ${plan.currency}`) ?? 0) > 0 ||
      issued.has(periodKey(row.id, period.start.toISOString()))
    ) {
      return;
    }
    const draft = plainRenewalDraft(ctx, {
      subscription: row,
      plan,
      period,
      nextPaymentAttemptAt: charged.has(row.customer_id) ? now : null,
      discounts: discounts.get(row.id)!,
      taxes: taxes[i]!,
    });
    if (draft !== null) drafts.set(row.id, draft);
  });

  const renewed: Subscription[] = [];
  let plain: SubscriptionRow[] = [];
  const writePlain = async () => {
    if (plain.length === 0) return;
    await issuePlainRenewalInvoices(
      trx,
      ctx,
      plain.map((row) => drafts.get(row.id)!),
    );
    const moves = plain.map((row) => {
      const { period } = terms.get(row.id)!;
      return { row, current_period_start: period.start.toISOString(), current_period_end: period.end.toISOString() };
    });
    renewed.push(...(await updateSubscriptionPeriods(trx, ctx.clock, moves)));
    plain = [];
  };
  for (const row of rows) {
    if (drafts.has(row.id)) {
      plain.push(row);
      continue;
    }
    await writePlain();
    renewed.push(await renewSubscription(trx, ctx, row));
  }
  await writePlain();
  return renewed;
}
