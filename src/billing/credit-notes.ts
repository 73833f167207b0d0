// Credit notes (SPEC §14 "Credit notes", Stripe's model): a finalized invoice corrected after
// the fact. A note first lowers what the invoice still owes (pre-payment: `amount_due` falls,
// an invoice left owing nothing is `paid`); what it credits beyond that (post-payment) is
// split exactly into a refund through the payment's provider, credit on the customer's balance
// and money returned out of band. Everything is written in ONE transaction — the note, the
// invoice, the ledger entry, the pending refunds, the event — under the invoice's lock, so
// notes issued at once never exceed the invoice. The refunds are then asked of the provider
// after commit by the existing refund path (billing/refunds.ts): committed first, resumed by
// the worker after a timeout or a crash, looked up before anything is sent again: never twice.
import { createHash } from 'node:crypto';
import type { Transaction } from 'kysely';
import type { Deps } from '../deps.ts';
import type { Database } from '../db/database.ts';
import { transactionWithRetry } from '../db/transaction.ts';
import { AppError, NotFoundError, StateConflictError, ValidationError } from '../http/errors.ts';
import { isProviderName } from '../shared/provider-names.ts';
import {
  customerBalance,
  lockCustomerBalances,
  recordBalanceTransaction,
} from '../modules/balances/balances.ledger.ts';
import {
  creditedOnInvoice,
  type CreditNote,
  type CreditNoteRefund,
  findCreditNoteByRequestKey,
  findCreditNoteRow,
  insertCreditNote,
  lockCreditNote,
  markCreditNoteVoid,
  newCreditNoteId,
  toCreditNote,
} from '../modules/credit-notes/credit-notes.records.ts';
import type { CreateCreditNoteInput } from '../modules/credit-notes/credit-notes.schemas.ts';
import { closeOpenCase, setCaseAmountDue } from '../modules/dunning/dunning.cases.ts';
import { emitEvent } from '../modules/events/events.service.ts';
import {
  applyCreditNoteToInvoice,
  findInvoiceRow,
  type Invoice,
  type InvoiceLine,
  lockInvoice,
} from '../modules/invoices/invoices.lifecycle.ts';
import { isPayable } from '../modules/invoices/invoices.status.ts';
import { finishChargesOfPaidInvoice } from '../modules/payment-attempts/payment-attempts.ts';
import { toPaymentAttempt } from '../modules/payment-attempts/payment-attempts.schemas.ts';
import { lockPaymentByReference } from '../modules/payments/payments.references.ts';
import { refundableOf, startRefundRequest } from '../modules/payments/payments.refund-requests.ts';
import { nextStatus } from '../modules/subscriptions/subscriptions.status.ts';
import { lockSubscription, transitionSubscription } from '../modules/subscriptions/subscriptions.lifecycle.ts';
import { withClockFor } from '../modules/test-clocks/test-clocks.time.ts';
import { MANUAL_PROVIDER, type PaymentRow, type RefundRow } from '../db/tables/payments.table.ts';
import type { InvoiceRow } from '../db/tables/invoices.table.ts';
import type { Clock } from '../shared/clock.ts';
import { PROVIDER_DISPLAY_NAMES } from '../providers/provider-api.ts';
import { API_KEY_VARIABLE } from '../providers/provider-apis.ts';
import { type RefundCall, refundLeaseMs, resolveRefund, stripeReasonOf } from './refunds.ts';

/**
 * The key a request's credit note is found by when it is retried: hex SHA-256 of the API
 * key's id, the Idempotency-Key and the request's fingerprint (as refunds.ts refundRequestKey).
 * Null without an Idempotency-Key.
 */
export function creditNoteRequestKey(claim: { principalId: string; key: string; fingerprint: string } | undefined) {
  if (!claim) return null;
  return createHash('sha256')
    .update(`credit_note\n${claim.principalId}\n${claim.key}\n${claim.fingerprint}`)
    .digest('hex');
}

/** How a credit note's amount divides (SPEC §14; Stripe's pre_payment_amount / post_payment_amount). */
export interface CreditSplit {
  prePayment: number;
  postPayment: number;
}

/**
 * Pure: what credit note `amount` (minor units) takes off an invoice that still owes
 * `remaining` (amount_remaining; 0 for a paid invoice) — the pre-payment part, never more
 * than remains — and what it gives back after payment (the rest). Stripe: "a credit note will
 * first reduce the invoice's amount_remaining (and amount_due), but not below zero".
 */
export function splitCredit(amount: number, remaining: number): CreditSplit {
  const prePayment = Math.max(0, Math.min(amount, remaining));
  return { prePayment, postPayment: amount - prePayment };
}

/**
 * Pure: spreads `amount` (minor units) over `payments` in their order (oldest first), each
 * taking at most its `refundable`; returns the [payment id, amount] parts (no zero parts), or
 * null when the payments cannot hold it all.
 */
export function spreadRefund(
  amount: number,
  payments: readonly { id: string; refundable: number }[],
): [string, number][] | null {
  const parts: [string, number][] = [];
  let left = amount;
  for (const payment of payments) {
    if (left === 0) break;
    const take = Math.min(left, payment.refundable);
    if (take > 0) parts.push([payment.id, take]);
    left -= take;
  }
  return left === 0 ? parts : null;
}

/** A credit note as created, and the refunds to ask the provider for once it is committed. */
interface Created {
  note: CreditNote;
  calls: RefundCall[];
}

/**
 * Issues a credit note for invoice `input.invoice_id` (SPEC §14 "Credit notes") → the note
 * (201). `amount` (minor units) or `lines` (invoice line ids and amounts; the note is their
 * sum), never both. The note first lowers what the invoice still owes (open or uncollectible:
 * `amount_due` falls, `pre_payment_credit_notes_amount` grows; nothing left owing → `paid`,
 * the subscription moving as for a payment); the rest (all of it on a paid invoice) must be
 * split exactly: `refund_amount + credit_amount + out_of_band_amount`. The refund is spread
 * over the invoice's provider payments, oldest first, one pending refund per payment committed
 * with the note, then asked of the provider (billing/refunds.ts resolveRefund; no usable
 * answer: the worker resumes it); the credit is a `credit_note` ledger entry; out of band is
 * recorded only. Emits `credit_note.created`. With `requestKey` (creditNoteRequestKey) a retry
 * of a request that already made its note gets that note. Throws 404 `not_found` (unknown
 * invoice); 409 `validation_error` (a draft or void invoice); 400 `validation_error` (amount and
 * lines both or neither, an unknown or over-credited line, more than the invoice's total minus
 * its earlier non-void notes, a split that does not add up); 422 `invalid_state` (a refund
 * beyond what the invoice's provider payments may still refund, or a provider without API key).
 */
export async function createCreditNote(
  deps: Deps,
  input: CreateCreditNoteInput,
  requestKey: string | null,
): Promise<CreditNote> {
  if (requestKey !== null) {
    const earlier = await findCreditNoteByRequestKey(deps.db, requestKey);
    if (earlier) return toCreditNote(earlier, deps.config.publicUrl);
  }
  if ((input.amount === undefined) === (input.lines === undefined)) {
    throw new ValidationError('give either amount or lines', input.amount === undefined ? 'amount' : 'lines');
  }
  const created = await transactionWithRetry(deps.db, (trx) => issueCreditNote(deps, trx, input, requestKey));
  for (const call of created.calls) {
    try {
      await resolveRefund(deps, call);
    } catch (error) {
      // The note stands either way: a refusal leaves the refund `failed`, no answer leaves it
      // pending for the worker (resolve_unknown_refunds). `refunds` names each one.
      if (!(error instanceof AppError)) throw error;
    }
  }
  return created.note;
}

async function issueCreditNote(
  deps: Deps,
  trx: Transaction<Database>,
  input: CreateCreditNoteInput,
  requestKey: string | null,
): Promise<Created> {
  const found = await findInvoiceRow(trx, input.invoice_id);
  if (!found) throw new NotFoundError('invoice', input.invoice_id);
  const ctx = await withClockFor(trx, deps, found.test_clock_id);
  // Lock order (db/locking.ts): payment references → subscriptions → customer balance →
  // invoices → credit notes. The payments a refund may touch are those linked to the invoice.
  const payments = await lockInvoicePayments(trx, found.id);
  const subscription = found.subscription_id === null ? null : await lockSubscription(trx, found.subscription_id);
  await lockCustomerBalances(trx, [found.customer_id]);
  const invoice = await lockInvoice(trx, found.id);
  if (invoice.status === 'draft' || invoice.status === 'void') {
    throw new StateConflictError(`invoice ${invoice.id} cannot be credited in its current state (${invoice.status})`);
  }
  const credited = await creditedOnInvoice(trx, invoice.id);
  const lines = input.lines === undefined ? [] : linesOf(invoice, input.lines, credited.byLine);
  const amount = input.amount ?? lines.reduce((sum, line) => sum + line.amount, 0);
  const creditable = Number(invoice.total) - credited.total;
  if (amount > creditable) {
    throw new ValidationError(
      `amount ${amount} exceeds the ${Math.max(creditable, 0)} that may still be credited on invoice ${invoice.id} (total ${Number(invoice.total)}, ${credited.total} credited by earlier credit notes)`,
      'amount',
    );
  }
  const remaining = isPayable(invoice.status) ? Number(invoice.amount_due) - Number(invoice.amount_paid) : 0;
  const split = splitCredit(amount, remaining);
  const refundAmount = input.refund_amount ?? 0;
  const creditAmount = input.credit_amount ?? 0;
  const outOfBandAmount = input.out_of_band_amount ?? 0;
  if (refundAmount + creditAmount + outOfBandAmount !== split.postPayment) {
    throw new ValidationError(
      split.prePayment === amount
        ? `invoice ${invoice.id} still owes ${remaining}: this credit note lowers what is due, so refund_amount, credit_amount and out_of_band_amount must be 0`
        : `refund_amount + credit_amount + out_of_band_amount must equal ${split.postPayment}, the part of the credit note beyond what invoice ${invoice.id} still owes (${remaining}); got ${refundAmount + creditAmount + outOfBandAmount}`,
      'refund_amount',
    );
  }
  const id = newCreditNoteId();
  const refunds =
    refundAmount === 0
      ? []
      : await startRefunds(
          deps,
          trx,
          ctx.clock,
          invoice,
          payments,
          refundAmount,
          credited.refunded,
          id,
          input.reason ?? null,
        );

  let balanceTransactionId: string | null = null;
  if (creditAmount > 0) {
    const entry = await recordBalanceTransaction(trx, ctx.clock, {
      customerId: invoice.customer_id,
      testClockId: invoice.test_clock_id,
      currency: invoice.currency,
      amount: creditAmount,
      kind: 'credit_note',
      invoiceId: invoice.id,
    });
    balanceTransactionId = entry.id;
  }
  const applied = await applyCreditNoteToInvoice(trx, ctx, invoice, split);
  if (applied.paid) {
    await creditNotePaidInvoice(trx, ctx.clock, applied.invoice, subscription);
  } else if (split.prePayment > 0) {
    // A case chasing the invoice chases what it still owes.
    await setCaseAmountDue(trx, ctx.clock, invoice.id, applied.invoice.amount_remaining);
  }
  const note = await insertCreditNote(trx, ctx.clock, deps.config.publicUrl, id, {
    invoiceId: invoice.id,
    customerId: invoice.customer_id,
    testClockId: invoice.test_clock_id,
    currency: invoice.currency,
    amount,
    prePaymentAmount: split.prePayment,
    postPaymentAmount: split.postPayment,
    refundAmount,
    creditAmount,
    outOfBandAmount,
    reason: input.reason ?? null,
    memo: input.memo ?? null,
    lines,
    refunds: refunds.map(({ refund }) => ({
      refund_id: refund.id,
      payment_id: refund.payment_id,
      amount: Number(refund.amount),
    })),
    balanceTransactionId,
    requestKey,
  });
  return { note, calls: refunds };
}

/**
 * The provider payments (not `manual`) linked to invoice `invoiceId`, oldest first, each
 * locked by its reference as a refund request locks it (payments.references.ts). Read before
 * the invoice's lock: the reference locks come first in the lock order.
 */
async function lockInvoicePayments(trx: Transaction<Database>, invoiceId: string): Promise<PaymentRow[]> {
  const linked = await trx
    .selectFrom('payments')
    .selectAll()
    .where('invoice_id', '=', invoiceId)
    .where('status', '!=', 'failed')
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  const locked: PaymentRow[] = [];
  for (const payment of linked) {
    if (payment.provider === MANUAL_PROVIDER || !isProviderName(payment.provider)) continue;
    const row = await lockPaymentByReference(trx, payment.provider, payment.provider_reference);
    if (row && row.id === payment.id && row.invoice_id === invoiceId && row.status !== 'failed') locked.push(row);
  }
  return locked;
}

/** The note's lines from the request: each an invoice line with a positive amount, credited at most what is left of it. */
function linesOf(
  invoice: InvoiceRow,
  requested: NonNullable<CreateCreditNoteInput['lines']>,
  creditedByLine: ReadonlyMap<string, number>,
): { invoice_line_id: string; description: string; amount: number }[] {
  const invoiceLines = new Map((JSON.parse(invoice.lines) as InvoiceLine[]).map((line) => [line.id, line]));
  const asked = new Map<string, number>();
  return requested.map((request, index) => {
    const line = invoiceLines.get(request.invoice_line_id);
    if (!line || line.amount <= 0) {
      throw new ValidationError(
        `lines[${index}].invoice_line_id ${request.invoice_line_id} is not a charged line of invoice ${invoice.id}`,
        `lines[${index}].invoice_line_id`,
      );
    }
    const before = (creditedByLine.get(line.id) ?? 0) + (asked.get(line.id) ?? 0);
    if (request.amount > line.amount - before) {
      throw new ValidationError(
        `lines[${index}].amount ${request.amount} exceeds the ${line.amount - before} left to credit on line ${line.id}`,
        `lines[${index}].amount`,
      );
    }
    asked.set(line.id, (asked.get(line.id) ?? 0) + request.amount);
    return { invoice_line_id: line.id, description: line.description, amount: request.amount };
  });
}

/**
 * The pending refunds of a credit note's `amount` (minor units), spread over the invoice's
 * locked provider `payments`, oldest first, each within what it may still refund (amount −
 * succeeded − pending, SPEC §10) — and all within what the invoice was paid minus what earlier
 * notes refunded (`refundedBefore`): a payment's surplus is the customer's credit already.
 * Each is committed with the note and asked of the provider after commit. Throws 422
 * `invalid_state` when they cannot hold it or a provider has no API key.
 */
async function startRefunds(
  deps: Deps,
  trx: Transaction<Database>,
  clock: Clock,
  invoice: InvoiceRow,
  payments: readonly PaymentRow[],
  amount: number,
  refundedBefore: number,
  creditNoteId: string,
  reason: string | null,
): Promise<RefundCall[]> {
  const paid = Number(invoice.amount_paid) - refundedBefore;
  const refundable: { id: string; refundable: number }[] = [];
  for (const payment of payments)
    refundable.push({ id: payment.id, refundable: (await refundableOf(trx, payment)).refundable });
  const total = refundable.reduce((sum, payment) => sum + payment.refundable, 0);
  const parts = amount > paid ? null : spreadRefund(amount, refundable);
  if (!parts) {
    throw new AppError(
      'invalid_state',
      `refund_amount ${amount} exceeds the ${Math.max(0, Math.min(paid, total))} that may still be refunded on invoice ${invoice.id} through its payments' providers (refund a manual payment out of band: out_of_band_amount)`,
      { refundable: Math.max(0, Math.min(paid, total)) },
    );
  }
  const byId = new Map(payments.map((payment) => [payment.id, payment]));
  const calls: RefundCall[] = [];
  for (const [paymentId, part] of parts) {
    const payment = byId.get(paymentId)!;
    const provider = payment.provider;
    if (!isProviderName(provider)) continue;
    if (!deps.providers[provider]) {
      throw new AppError(
        'invalid_state',
        `${PROVIDER_DISPLAY_NAMES[provider]} cannot refund payments: ${API_KEY_VARIABLE[provider]} is not set`,
      );
    }
    // Stripe's own reasons travel as its `reason`; any other names the note (metadata, merchant_note).
    const refundReason = reason !== null && stripeReasonOf(reason) ? reason : `credit note ${creditNoteId}`;
    const refund: RefundRow = await startRefundRequest(trx, clock, payment, {
      amount: part,
      reason: refundReason,
      requestKey: null,
      leaseMs: refundLeaseMs(deps),
    });
    calls.push({ refund, provider, paymentReference: payment.provider_reference, resumed: false, clock });
  }
  return calls;
}

/**
 * A credit note left invoice `invoice` owing nothing: it is paid (SPEC §14), so its
 * subscription moves as a payment would move it (`incomplete`/`trialing`/`past_due`/`unpaid`
 * → `active`) and its dunning case recovers; automatic charges still unresolved are finished
 * (`invoice.payment_attempted`, failure `invoice_paid`), as settle.ts does for a payment.
 */
async function creditNotePaidInvoice(
  trx: Transaction<Database>,
  clock: Clock,
  invoice: Invoice,
  subscription: Awaited<ReturnType<typeof lockSubscription>> | null,
): Promise<void> {
  for (const attempt of await finishChargesOfPaidInvoice(trx, clock, invoice.id, null)) {
    await emitEvent(trx, clock, 'invoice.payment_attempted', { invoice, attempt: toPaymentAttempt(attempt) });
  }
  if (subscription === null || !nextStatus(subscription.status, 'payment_succeeded')) return;
  await transitionSubscription(trx, clock, subscription, 'payment_succeeded');
  await closeOpenCase(trx, clock, subscription.id, 'recovered', invoice.id);
}

/**
 * Voids credit note `id` (SPEC §14) → the note, `void` (`voided_at`, `credit_note.voided`),
 * restoring what it did: the invoice's `amount_due` rises by its pre-payment part again, its
 * credit is taken back from the customer's balance (a `reversal` entry naming the note). One
 * transaction. Stripe voids only notes of open invoices; we follow it for the pre-payment part
 * (the invoice must still be open or uncollectible) and also void a note of a paid invoice
 * when nothing it did is beyond recall. Throws 404 `not_found`; 409 `validation_error` (already
 * void; it asked for a refund — a refund is never taken back; its pre-payment part went to an
 * invoice no longer payable); 409 `conflict` when the balance no longer holds the credit
 * (spent on invoices since).
 */
export async function voidCreditNote(deps: Deps, id: string): Promise<CreditNote> {
  return transactionWithRetry(deps.db, async (trx) => {
    const found = await findCreditNoteRow(trx, id);
    if (!found) throw new NotFoundError('credit note', id);
    const invoiceRow = await findInvoiceRow(trx, found.invoice_id);
    if (!invoiceRow) throw new NotFoundError('invoice', found.invoice_id);
    const ctx = await withClockFor(trx, deps, found.test_clock_id);
    if (invoiceRow.subscription_id !== null) await lockSubscription(trx, invoiceRow.subscription_id);
    await lockCustomerBalances(trx, [found.customer_id]);
    const invoice = await lockInvoice(trx, found.invoice_id);
    const note = await lockCreditNote(trx, id);
    const cannot = `credit note ${note.id} cannot be voided in its current state`;
    if (note.status !== 'issued') throw new StateConflictError(`${cannot} (${note.status})`);
    if (Number(note.refund_amount) > 0) {
      throw new StateConflictError(`${cannot} (it refunded ${Number(note.refund_amount)}: a refund is not taken back)`);
    }
    if (Number(note.pre_payment_amount) > 0 && !isPayable(invoice.status)) {
      throw new StateConflictError(
        `${cannot} (it lowered what invoice ${invoice.id} owed, which is ${invoice.status} now)`,
      );
    }
    const credit = Number(note.credit_amount);
    let reversalId: string | null = null;
    if (credit > 0) {
      const balance = await customerBalance(trx, note.customer_id, note.currency);
      if (balance < credit) {
        throw new AppError(
          'conflict',
          `credit note ${note.id} gave ${credit} ${note.currency} of credit and the balance holds only ${balance} now (spent on invoices): it cannot be taken back`,
          { credit_amount: credit, balance },
        );
      }
      const reversal = await recordBalanceTransaction(trx, ctx.clock, {
        customerId: note.customer_id,
        testClockId: note.test_clock_id,
        currency: note.currency,
        amount: -credit,
        kind: 'reversal',
        invoiceId: note.invoice_id,
      });
      reversalId = reversal.id;
    }
    const restored = await applyCreditNoteToInvoice(trx, ctx, invoice, {
      prePayment: -Number(note.pre_payment_amount),
      postPayment: -Number(note.post_payment_amount),
    });
    if (Number(note.pre_payment_amount) > 0) {
      await setCaseAmountDue(trx, ctx.clock, invoice.id, restored.invoice.amount_remaining);
    }
    return markCreditNoteVoid(trx, ctx.clock, deps.config.publicUrl, note, reversalId);
  });
}

export type { CreditNoteRefund };
