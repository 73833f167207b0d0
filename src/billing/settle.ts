// What payments do to invoices (SPEC §9 "Settlement"): which invoice a payment settles, how
// its amount adds up, what a failure counts, and the invoice a payment with nothing to settle
// buys. subscription-payments.ts calls these under the
// subscription's lock, so the lock order stays subscriptions → invoices → dunning_cases.
// Nothing here moves a subscription or a dunning case: the caller decides that from the result.
import type { Transaction } from 'kysely';
import type { Database } from '../db/database.ts';
import { forUpdate } from '../db/locking.ts';
import { isIdOf } from '../shared/ids.ts';
import { finishChargesOfPaidInvoice, type PaymentIdentity } from '../modules/payment-attempts/payment-attempts.ts';
import { toPaymentAttempt } from '../modules/payment-attempts/payment-attempts.schemas.ts';
import { emitEvent } from '../modules/events/events.service.ts';
import { linkPaymentToInvoice } from '../modules/payments/payments.recording.ts';
import type { PlanRow } from '../db/tables/plans.table.ts';
import { isPayable } from '../modules/invoices/invoices.status.ts';
import { periodInvoiceInput } from './compose/input.ts';
import { composeInvoice } from './compose/pipeline.ts';
import {
  type Invoice,
  type InvoiceContext,
  issueInvoice,
  toInvoice,
  transitionInvoice,
  updateInvoice,
} from '../modules/invoices/invoices.lifecycle.ts';
import type { InvoiceRow } from '../db/tables/invoices.table.ts';

/** The subscription a payment is attributed to (its id and customer). */
export interface PayingSubscription {
  id: string;
  customer_id: string;
  /** Its customer's test clock (SPEC §11); null: real time. */
  test_clock_id: string | null;
}

/**
 * Which invoice a payment of `currency` settles (SPEC §9):
 * - `invoice`: this one (locked);
 * - `none`: the subscription has no open/uncollectible invoice at all — the payment buys the
 *   next period (issuePaidPeriodInvoice);
 * - `nothing`: the payment settles nothing and moves nothing — it names an invoice of this
 *   subscription that is void, or every payable invoice is in another currency.
 */
export type SettlementTarget = { kind: 'invoice'; row: InvoiceRow } | { kind: 'none' } | { kind: 'nothing' };

/**
 * Finds (and locks, on PostgreSQL) what a payment of `currency` for `subscription` settles.
 * `namedInvoiceId` (the provider metadata `invoice_id`, or the invoice POST …/pay names) wins
 * when it is an invoice of this subscription and customer, payable and in `currency`; a
 * named invoice that is `void` makes the payment settle nothing (it arrived after the void);
 * one that is `paid`, of someone else, malformed or unknown is ignored. Otherwise the oldest
 * (by period, then creation) open/uncollectible invoice in `currency`.
 */
export async function findSettlementTarget(
  trx: Transaction<Database>,
  subscription: PayingSubscription,
  currency: string,
  namedInvoiceId?: string | null,
): Promise<SettlementTarget> {
  if (typeof namedInvoiceId === 'string' && isIdOf('invoice', namedInvoiceId)) {
    const named = await forUpdate(
      trx
        .selectFrom('invoices')
        .selectAll()
        .where('id', '=', namedInvoiceId)
        .where('subscription_id', '=', subscription.id)
        .where('customer_id', '=', subscription.customer_id),
      trx,
    ).executeTakeFirst();
    if (named?.status === 'void') return { kind: 'nothing' };
    if (named && isPayable(named.status) && named.currency === currency) return { kind: 'invoice', row: named };
  }
  const payable = await forUpdate(
    trx
      .selectFrom('invoices')
      .selectAll()
      .where('subscription_id', '=', subscription.id)
      .where('status', 'in', ['open', 'uncollectible'])
      .orderBy('period_start')
      .orderBy('created_at')
      .orderBy('id'),
    trx,
  ).execute();
  if (payable.length === 0) return { kind: 'none' };
  const row = payable.find((invoice) => invoice.currency === currency);
  return row ? { kind: 'invoice', row } : { kind: 'nothing' };
}

/** A succeeded payment as settlement sees it. */
export interface SettlingPayment {
  /** The recorded payment (`pay_…`), linked to the invoice it settles; null in lifecycle tests. */
  paymentId: string | null;
  /** Minor units, in the invoice's currency (findSettlementTarget checked it). */
  amount: number;
  /** The payment as its provider knows it: tells whether it is an automatic charge's (SPEC §10). */
  identity?: PaymentIdentity | null;
}

/** What a payment did to an invoice. */
export interface Settlement {
  /** The invoice after. */
  invoice: Invoice;
  /** Minor units the payment added to `amount_paid` (≤ the payment's amount). */
  applied: number;
  /** The payment made `amount_remaining` reach 0 (`invoice.paid` was emitted). */
  paid: boolean;
}

/**
 * Applies `payment` to the locked payable invoice `row` (SPEC §9): `amount_paid` grows by
 * min(amount, amount_remaining), capped at `amount_due` — the rest stays on the payment,
 * unapplied, and opens no credit. When nothing remains the invoice becomes `paid`
 * (`invoice.paid`); a partial payment leaves it `open`/`uncollectible` with no event of its
 * own (the payment's `payment.succeeded` tells it). The payment is linked to the invoice
 * (`payments.invoice_id`). A paid invoice's unresolved automatic charges are finished —
 * `succeeded` when this payment is the charge's, else closed — each with
 * `invoice.payment_attempted` (SPEC §10 "Exactly once"). All in `trx`.
 */
export async function settleInvoice(
  trx: Transaction<Database>,
  ctx: InvoiceContext,
  row: InvoiceRow,
  payment: SettlingPayment,
): Promise<Settlement> {
  if (!isPayable(row.status)) throw new Error(`invoice ${row.id} is ${row.status}: nothing to settle`);
  const due = Number(row.amount_due);
  const before = Number(row.amount_paid);
  const applied = Math.max(0, Math.min(payment.amount, due - before));
  const amountPaid = before + applied;
  if (payment.paymentId !== null) await linkPaymentToInvoice(trx, ctx.clock, payment.paymentId, row.id);
  if (amountPaid >= due) {
    const invoice = await transitionInvoice(trx, ctx, row, 'paid', { amount_paid: amountPaid });
    // A charge still waiting for its answer (its worker may be dead) would block nothing now,
    // but stay pending for ever: it is finished with the payment that paid the invoice.
    for (const attempt of await finishChargesOfPaidInvoice(trx, ctx.clock, row.id, payment.identity)) {
      await emitEvent(trx, ctx.clock, 'invoice.payment_attempted', { invoice, attempt: toPaymentAttempt(attempt) });
    }
    return { invoice, applied, paid: true };
  }
  if (applied === 0) return { invoice: toInvoice(row, ctx.config.publicUrl), applied, paid: false };
  const invoice = await updateInvoice(trx, ctx, row, { amount_paid: amountPaid });
  return { invoice, applied, paid: false };
}

/** The period a payment bought, and who pays it. */
export interface PaidPeriod {
  subscription: PayingSubscription;
  plan: PlanRow;
  /** ISO 8601. */
  periodStart: string;
  periodEnd: string;
  payment: SettlingPayment;
}

/**
 * The invoice of a period a payment bought while the subscription owed nothing (SPEC §9:
 * "created already paid"): composed (SPEC §12) at the plan's price, or at the payment's amount
 * when that is less (the provider charged it, and it bought the period: SPEC §4), due now, and
 * settled at once — `invoice.created` then `invoice.paid`. An overpayment stays on the
 * payment. Exactly once per (subscription, period): when that period's invoice exists
 * already it is settled if payable and left alone otherwise. Returns the settlement, or
 * undefined when nothing was settled.
 */
export async function issuePaidPeriodInvoice(
  trx: Transaction<Database>,
  ctx: InvoiceContext,
  period: PaidPeriod,
): Promise<Settlement | undefined> {
  // The period is billed at the price the payment paid when that is less (SPEC §9 "Nothing owed").
  const price = Math.min(Number(period.plan.amount), period.payment.amount);
  const content = composeInvoice(
    periodInvoiceInput({
      reason: 'renewal',
      customerId: period.subscription.customer_id,
      subscriptionId: period.subscription.id,
      plan: { ...period.plan, amount: price },
      periodStart: period.periodStart,
      periodEnd: period.periodEnd,
    }),
  );
  const { invoice, created } = await issueInvoice(trx, ctx, {
    customerId: period.subscription.customer_id,
    testClockId: period.subscription.test_clock_id,
    subscriptionId: period.subscription.id,
    currency: period.plan.currency,
    periodStart: period.periodStart,
    periodEnd: period.periodEnd,
    dueAt: ctx.clock.now().toISOString(),
    content,
  });
  if (created && invoice.status === 'paid') {
    // It owed 0 (a free plan): issued paid, still the invoice this payment bought.
    if (period.payment.paymentId !== null)
      await linkPaymentToInvoice(trx, ctx.clock, period.payment.paymentId, invoice.id);
    return undefined;
  }
  const row = await forUpdate(
    trx.selectFrom('invoices').selectAll().where('id', '=', invoice.id),
    trx,
  ).executeTakeFirstOrThrow();
  // An invoice of that period existed already: settled if it is still payable, else left alone.
  if (!isPayable(row.status) || row.currency !== period.plan.currency) return undefined;
  return settleInvoice(trx, ctx, row, period.payment);
}

/**
 * Issues the invoice of one subscription period (SPEC §9 "When invoices are created"), its
 * lines and totals composed by the pipeline (SPEC §12) for `period.reason` — the first
 * period at creation, a renewal (a trial's end too) from the worker: `open`, due at `dueAt`,
 * exactly once per (subscription, period). The caller holds the subscription's lock. Returns
 * the invoice and whether it is new.
 */
export async function issuePeriodInvoice(
  trx: Transaction<Database>,
  ctx: InvoiceContext,
  subscription: PayingSubscription,
  plan: PlanRow,
  period: {
    reason: 'first_period' | 'renewal';
    start: string;
    end: string;
    dueAt: string;
    nextPaymentAttemptAt?: string | null;
  },
): Promise<{ invoice: Invoice; created: boolean }> {
  return issueInvoice(trx, ctx, {
    nextPaymentAttemptAt: period.nextPaymentAttemptAt ?? null,
    customerId: subscription.customer_id,
    testClockId: subscription.test_clock_id,
    subscriptionId: subscription.id,
    currency: plan.currency,
    periodStart: period.start,
    periodEnd: period.end,
    dueAt: period.dueAt,
    content: composeInvoice(
      periodInvoiceInput({
        reason: period.reason,
        customerId: subscription.customer_id,
        subscriptionId: subscription.id,
        plan,
        periodStart: period.start,
        periodEnd: period.end,
      }),
    ),
  });
}

/**
 * A failed payment for the locked payable invoice `row`: one more `attempt_count` and
 * `invoice.payment_failed` (SPEC §9). Returns the invoice after.
 */
export async function countFailedAttempt(
  trx: Transaction<Database>,
  ctx: InvoiceContext,
  row: InvoiceRow,
): Promise<Invoice> {
  return updateInvoice(trx, ctx, row, { attempt_count: row.attempt_count + 1 }, 'invoice.payment_failed');
}

/**
 * Marks invoice `id` `uncollectible` (`invoice.marked_uncollectible`) when it is `open`:
 * dunning's final action `cancel` gave up on it (SPEC §9). Any other state is left as is.
 * Locks the invoice; the caller holds its subscription's lock (lock order).
 */
export async function markInvoiceUncollectibleIfOpen(
  trx: Transaction<Database>,
  ctx: InvoiceContext,
  id: string,
): Promise<Invoice | undefined> {
  const row = await forUpdate(trx.selectFrom('invoices').selectAll().where('id', '=', id), trx).executeTakeFirst();
  if (row?.status !== 'open') return undefined;
  return transitionInvoice(trx, ctx, row, 'mark_uncollectible');
}

/**
 * Voids the `open` invoices of subscription `subscriptionId` nothing was paid on
 * (`invoice.voided` each): its first payment never came within SUBSCRIPTION_INCOMPLETE_TTL, so
 * the invoice that payment would have settled is owed no more. A partly paid one stays open:
 * money was received against it. The caller holds the subscription's lock (lock order).
 * Returns how many were voided.
 */
export async function voidUnpaidInvoices(
  trx: Transaction<Database>,
  ctx: InvoiceContext,
  subscriptionId: string,
): Promise<number> {
  const rows = await forUpdate(
    trx
      .selectFrom('invoices')
      .selectAll()
      .where('subscription_id', '=', subscriptionId)
      .where('status', '=', 'open')
      .where('amount_paid', '=', 0)
      .orderBy('id'),
    trx,
  ).execute();
  for (const row of rows) await transitionInvoice(trx, ctx, row, 'void');
  return rows.length;
}
