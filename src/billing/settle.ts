// What payments do to invoices (SPEC §9 "Settlement", §12): the ONE place a payment is
// applied — which invoice it settles, how its amount adds up, where a surplus goes (the
// customer's credit balance), what a failure counts, and the next period's invoice a payment
// with nothing to pay issues (through issue.ts) and settles. Callers hold the subscription's
// lock, so the lock order stays subscriptions → customer balance → invoices → dunning_cases.
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
import { recordBalanceTransaction } from '../modules/balances/balances.ledger.ts';
import { isPayable } from '../modules/invoices/invoices.status.ts';
import {
  type Invoice,
  type InvoiceContext,
  toInvoice,
  transitionInvoice,
  updateInvoice,
} from '../modules/invoices/invoices.lifecycle.ts';
import { type BilledSubscription, issueAdvanceInvoice } from './issue.ts';
import type { InvoiceRow } from '../db/tables/invoices.table.ts';

/** Who a payment is for: a subscription (its invoices), or only a customer (their one-off invoices). */
export interface Payer {
  customerId: string;
  /** Null: the payment is the customer's only (no subscription attributed). */
  subscriptionId: string | null;
}

/**
 * Which invoice a payment of `currency` settles (SPEC §9):
 * - `invoice`: this one (locked);
 * - `none`: nothing is payable at all — a subscription's payment then pays in advance
 *   (settlePayment);
 * - `nothing`: the payment settles nothing and moves nothing — it names an invoice of this
 *   payer that is void, or every payable invoice is in another currency.
 */
export type SettlementTarget = { kind: 'invoice'; row: InvoiceRow } | { kind: 'none' } | { kind: 'nothing' };

/**
 * Finds (and locks, on PostgreSQL) what a payment of `currency` from `payer` settles, among
 * the subscription's invoices — or, for a payment of a customer only, among the customer's
 * one-off invoices (no subscription). `namedInvoiceId` (the provider metadata `invoice_id`, or
 * the invoice POST …/pay names) wins when it is one of those, payable and in `currency`; a
 * named one that is `void` makes the payment settle nothing (it arrived after the void); one
 * that is `paid`, someone else's, malformed or unknown is ignored. Otherwise the oldest (by
 * period, then creation) open/uncollectible one in `currency`.
 */
export async function findSettlementTarget(
  trx: Transaction<Database>,
  payer: Payer,
  currency: string,
  namedInvoiceId?: string | null,
): Promise<SettlementTarget> {
  const payers = () => {
    const mine = trx.selectFrom('invoices').selectAll();
    return payer.subscriptionId === null
      ? mine.where('customer_id', '=', payer.customerId).where('subscription_id', 'is', null)
      : mine.where('subscription_id', '=', payer.subscriptionId);
  };
  if (typeof namedInvoiceId === 'string' && isIdOf('invoice', namedInvoiceId)) {
    const named = await forUpdate(
      payers().where('id', '=', namedInvoiceId).where('customer_id', '=', payer.customerId),
      trx,
    ).executeTakeFirst();
    if (named?.status === 'void') return { kind: 'nothing' };
    if (named && isPayable(named.status) && named.currency === currency) return { kind: 'invoice', row: named };
  }
  const payable = await forUpdate(
    payers()
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
  /** Minor units, in the invoice's currency (findSettlementTarget checked it); null: exactly what the invoice owes. */
  amount: number | null;
  /** The payment as its provider knows it: tells whether it is an automatic charge's (SPEC §10). */
  identity?: PaymentIdentity | null;
}

/** What a payment did to an invoice. */
export interface Settlement {
  /** The invoice after. */
  invoice: Invoice;
  /** Minor units the payment added to `amount_paid` (≤ the payment's amount). */
  applied: number;
  /** Minor units of the payment beyond what the invoice owed: added to the customer's credit balance. */
  credited: number;
  /** The invoice is paid now, by this payment or (an invoice it issued) by the credit balance. */
  paid: boolean;
  /** The payment found nothing payable and issued this invoice: it pays in advance. */
  issued: boolean;
}

/**
 * Applies `payment` to the locked payable invoice `row` (SPEC §9): `amount_paid` grows by
 * min(amount, amount_remaining), never beyond `amount_due`; the rest of the payment goes to
 * the customer's credit balance in the invoice's currency (an `overpayment` transaction
 * naming the invoice and the payment, SPEC §14). When nothing remains the invoice becomes
 * `paid` (`invoice.paid`); a partial payment leaves it `open`/`uncollectible` with no event of
 * its own (the payment's `payment.succeeded` tells it). The payment is linked to the invoice
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
  const amount = payment.amount ?? due - before;
  const applied = Math.max(0, Math.min(amount, due - before));
  const amountPaid = before + applied;
  if (payment.paymentId !== null) await linkPaymentToInvoice(trx, ctx.clock, payment.paymentId, row.id);
  const credited = await creditSurplus(trx, ctx, row, payment.paymentId, amount - applied);
  if (amountPaid >= due) {
    const invoice = await transitionInvoice(trx, ctx, row, 'paid', { amount_paid: amountPaid });
    // A charge still waiting for its answer (its worker may be dead) would block nothing now,
    // but stay pending for ever: it is finished with the payment that paid the invoice.
    for (const attempt of await finishChargesOfPaidInvoice(trx, ctx.clock, row.id, payment.identity)) {
      await emitEvent(trx, ctx.clock, 'invoice.payment_attempted', { invoice, attempt: toPaymentAttempt(attempt) });
    }
    return { invoice, applied, credited, paid: true, issued: false };
  }
  if (applied === 0) {
    return { invoice: toInvoice(row, ctx.config.publicUrl), applied, credited, paid: false, issued: false };
  }
  const invoice = await updateInvoice(trx, ctx, row, { amount_paid: amountPaid });
  return { invoice, applied, credited, paid: false, issued: false };
}

/** Adds `surplus` (minor units; nothing when ≤ 0) of payment `paymentId` to the credit balance of `invoice`'s customer. */
async function creditSurplus(
  trx: Transaction<Database>,
  ctx: InvoiceContext,
  invoice: Pick<InvoiceRow, 'id' | 'customer_id' | 'currency' | 'test_clock_id'>,
  paymentId: string | null,
  surplus: number,
): Promise<number> {
  if (surplus <= 0) return 0;
  await recordBalanceTransaction(trx, ctx.clock, {
    customerId: invoice.customer_id,
    testClockId: invoice.test_clock_id,
    currency: invoice.currency,
    amount: surplus,
    kind: 'overpayment',
    invoiceId: invoice.id,
    paymentId,
  });
  return surplus;
}

/** A subscription paying in advance: what issuing its next period needs. */
export interface AdvancingSubscription {
  row: BilledSubscription;
  plan: PlanRow;
}

/** A succeeded payment to apply (SPEC §9 "Settlement"). */
export interface PaymentToSettle extends SettlingPayment {
  /** ISO 4217, upper case. */
  currency: string;
  /** The invoice the payer named (provider metadata `invoice_id`, POST …/pay); wins when valid. */
  invoiceId?: string | null;
}

/**
 * Applies a succeeded payment of `payer` to invoices (SPEC §9, §12) — the one path every
 * payment takes, whoever reports it:
 * 1. the invoice it names when valid, else the oldest payable one in its currency
 *    (findSettlementTarget), settled with settleInvoice (a surplus becomes credit);
 * 2. nothing payable and `advance` given (a subscription that a payment may move, in its
 *    plan's currency): the invoice of the next period not invoiced yet is issued through
 *    issue.ts — the customer's credit applied first — and settled by the payment (paying in
 *    advance; a surplus becomes credit again). A payment never moves a period by itself.
 * Returns the settlement, or null when the payment settles nothing (another currency than
 * what is owed, an invoice it names was voided, nothing payable and no advance allowed).
 * Throws (a defect, never a client's input) if the next period's invoice exists already.
 */
export async function settlePayment(
  trx: Transaction<Database>,
  ctx: InvoiceContext,
  payer: Payer,
  payment: PaymentToSettle,
  advance?: AdvancingSubscription,
): Promise<Settlement | null> {
  const target = await findSettlementTarget(trx, payer, payment.currency, payment.invoiceId);
  if (target.kind === 'invoice') return settleInvoice(trx, ctx, target.row, payment);
  if (target.kind === 'nothing' || !advance || advance.plan.currency !== payment.currency) return null;
  const { invoice, created } = await issueAdvanceInvoice(trx, ctx, advance.row, advance.plan);
  if (!created) throw new Error(`invoice ${invoice.id} of the next period exists already: nothing was payable`);
  if (invoice.status === 'paid') {
    // Its credit (or a free plan) paid it when issued: all of the payment is surplus.
    if (payment.paymentId !== null) await linkPaymentToInvoice(trx, ctx.clock, payment.paymentId, invoice.id);
    const credited = await creditSurplus(
      trx,
      ctx,
      { ...invoice, test_clock_id: advance.row.test_clock_id },
      payment.paymentId,
      payment.amount ?? 0,
    );
    return { invoice, applied: 0, credited, paid: true, issued: true };
  }
  const row = await forUpdate(
    trx.selectFrom('invoices').selectAll().where('id', '=', invoice.id),
    trx,
  ).executeTakeFirstOrThrow();
  return { ...(await settleInvoice(trx, ctx, row, payment)), issued: true };
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
