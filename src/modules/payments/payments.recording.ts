// Writes payments and refunds from provider reports (SPEC §4, §5), each change with its
// event in the caller's transaction. One payment per (provider, reference) and one refund
// per (provider, refund reference), whichever event reports them and in whatever order;
// `amount_refunded` is always the sum of the payment's succeeded refunds (payments.refund-totals.ts).
import type { Transaction } from 'kysely';
import { addToCount } from '../../db/counts.ts';
import { insertRows } from '../../db/bulk.ts';
import type { Database } from '../../db/database.ts';
import type { Clock } from '../../shared/clock.ts';
import { newId } from '../../shared/ids.ts';
import { emitEvent, emitEventWith } from '../events/events.service.ts';
import { pickFields } from '../../http/schemas.ts';
import { type Payment, paymentSchema } from './payments.schemas.ts';
import { sumSucceededRefunds } from './payments.service.ts';
import type { PaymentRow, RefundStatus } from '../../db/tables/payments.table.ts';
import type { LockedReference } from './payments.references.ts';
import { planRefunds, statusAfterRefunds } from './payments.refund-totals.ts';

/** A payment as a provider reported it, with our attribution. */
export interface PaymentInput {
  provider: string;
  reference: string;
  /** Minor units. */
  amount: number;
  /** ISO 4217 upper case. */
  currency: string;
  failureReason: string | null;
  /** ISO 8601: when the provider says it happened. */
  occurredAt: string;
  customerId: string | null;
  subscriptionId: string | null;
}

/** What recording a report did when it was accepted. */
export interface PaymentChange {
  /** The payment after the report (as the API returns it). */
  payment: Payment;
  /** The report moved the payment into `succeeded` (new, or from `failed`). */
  becameSucceeded: boolean;
  /** The report created the payment as `failed`. */
  becameFailed: boolean;
  /** The payment had no subscription before this report and has one now. */
  subscriptionAttached: boolean;
}

/**
 * What recording a payment report did: the change, or why nothing was written (the caller
 * decides what a refusal means; billing/payment-reports.ts makes the event unusable).
 */
export type PaymentRecording = ({ refused: false } & PaymentChange) | { refused: true; reason: string };

/**
 * Inserts the payment with its `topic` event (one statement on PostgreSQL: emitEventWith).
 * The caller holds its reference's lock (lockPaymentReference) and found no payment under
 * it, so no other transaction can insert it meanwhile. Were that lock ever missing, the
 * unique key (provider, provider_reference) fails the transaction rather than record the
 * payment twice. Counted after its event: every writer takes the shared counters in one
 * order (events first).
 */
async function insertPayment(
  trx: Transaction<Database>,
  clock: Clock,
  row: PaymentRow,
  topic: 'payment.succeeded' | 'payment.failed',
  payment: Payment,
): Promise<void> {
  const { invoice_id: _notYet, ...columns } = row;
  await emitEventWith(trx, clock, trx.insertInto('payments').values(columns), topic, payment);
  await addToCount(trx, 'payments', 1);
}

function newPaymentRow(input: PaymentInput, status: 'succeeded' | 'failed', now: string): PaymentRow {
  return {
    id: newId('payment'),
    customer_id: input.customerId,
    subscription_id: input.subscriptionId,
    provider: input.provider,
    provider_reference: input.reference,
    amount: input.amount,
    amount_refunded: 0,
    currency: input.currency,
    status,
    failure_reason: status === 'failed' ? input.failureReason : null,
    paid_at: status === 'succeeded' ? input.occurredAt : null,
    created_at: now,
    updated_at: now,
    invoice_id: null,
  };
}

/** Fills attribution the payment lacks; never moves a payment to another customer. */
function filledAttribution(row: PaymentRow, input: PaymentInput): Partial<PaymentRow> {
  const changes: Partial<PaymentRow> = {};
  if (row.customer_id === null && input.customerId !== null) changes.customer_id = input.customerId;
  const customer = changes.customer_id ?? row.customer_id;
  if (
    row.subscription_id === null &&
    input.subscriptionId !== null &&
    (customer === input.customerId || customer === null)
  ) {
    changes.subscription_id = input.subscriptionId;
  }
  return changes;
}

async function updatePayment(
  trx: Transaction<Database>,
  clock: Clock,
  row: PaymentRow,
  changes: Partial<PaymentRow>,
): Promise<PaymentRow> {
  const updated = { ...row, ...changes, updated_at: clock.now().toISOString() };
  await trx
    .updateTable('payments')
    .set({ ...changes, updated_at: updated.updated_at })
    .where('id', '=', row.id)
    .execute();
  return updated;
}

/**
 * Records a report of `status`: creates the payment, or — for a payment already known —
 * applies what the report adds. Success wins over failure: `failed` → `succeeded` is a
 * change, a late failure report for a paid payment changes nothing. Missing attribution is
 * filled in. Emits `payment.succeeded` / `payment.failed` whenever the payment changed.
 * `locked` is `input.reference` locked by the caller (lockPaymentReference): the payment
 * found, if any, and the canonical reference a new payment is keyed by.
 * A payment's amount and currency always come from one report (SPEC §5): a report in
 * another currency than the recorded payment's is refused (`{refused: true, reason}`) and
 * changes nothing.
 */
export async function recordPaymentReport(
  trx: Transaction<Database>,
  clock: Clock,
  locked: LockedReference,
  input: PaymentInput,
  status: 'succeeded' | 'failed',
): Promise<PaymentRecording> {
  const topic = status === 'succeeded' ? 'payment.succeeded' : 'payment.failed';
  const row = locked.payment;
  if (!row) {
    const created = newPaymentRow({ ...input, reference: locked.canonical }, status, clock.now().toISOString());
    const payment = pickFields(paymentSchema, created);
    await insertPayment(trx, clock, created, topic, payment);
    return {
      refused: false,
      payment,
      becameSucceeded: status === 'succeeded',
      becameFailed: status === 'failed',
      subscriptionAttached: created.subscription_id !== null,
    };
  }

  if (input.currency !== row.currency) {
    // An amount means nothing in another currency: taking this report's amount (or keeping
    // the payment's) would record money nobody paid.
    return { refused: true, reason: `currency ${input.currency} differs from the payment's ${row.currency}` };
  }
  const changes = filledAttribution(row, input);
  const becameSucceeded = status === 'succeeded' && row.status === 'failed';
  if (becameSucceeded) {
    // The amount is what the success report says was received (the failed attempt's may
    // differ); its currency is the payment's, checked above: both come from this report.
    Object.assign(changes, {
      status: 'succeeded',
      amount: input.amount,
      paid_at: input.occurredAt,
      failure_reason: null,
    });
  }
  const paid = row.status !== 'failed';
  // Attribution learnt from a failure report is not news once the payment has succeeded.
  const relevant = becameSucceeded || (status === 'succeeded' ? paid : !paid);
  if (!relevant || Object.keys(changes).length === 0) {
    return {
      refused: false,
      payment: pickFields(paymentSchema, row),
      becameSucceeded: false,
      becameFailed: false,
      subscriptionAttached: false,
    };
  }
  const updated = await updatePayment(trx, clock, row, changes);
  const payment = pickFields(paymentSchema, updated);
  await emitEvent(trx, clock, topic, payment);
  return {
    refused: false,
    payment,
    becameSucceeded,
    becameFailed: false,
    subscriptionAttached: changes.subscription_id !== undefined,
  };
}

/** A new succeeded payment of a charge batch (insertSettledPayments): who reports it, at whose time. */
export interface SettledPaymentInput {
  /** The time it is recorded at (the customer's clock: SPEC §11). */
  clock: Clock;
  /** The report, attributed; its reference is the canonical one (no payment under it yet: the caller checked under its lock). */
  input: PaymentInput;
  /** The invoice it settles (`inv_…`): written with the payment, as linkPaymentToInvoice would after. */
  invoiceId: string;
}

/**
 * Records several new succeeded payments in ONE insert, each as recordPaymentReport records a
 * new one (its `payment.succeeded`, whose `invoice_id` is still null, then counted) and
 * already linked to the invoice it settles (linkPaymentToInvoice's change, written with the
 * row). For a charge batch whose references the caller locked and found no payment under
 * (billing/charges.batch.ts). Returns the payments as their events show them, in input order.
 */
export async function insertSettledPayments(
  trx: Transaction<Database>,
  entries: readonly SettledPaymentInput[],
): Promise<Payment[]> {
  if (entries.length === 0) return [];
  const rows: PaymentRow[] = [];
  const payments: Payment[] = [];
  for (const { clock, input, invoiceId } of entries) {
    const created = newPaymentRow(input, 'succeeded', clock.now().toISOString());
    const payment = pickFields(paymentSchema, created);
    await emitEvent(trx, clock, 'payment.succeeded', payment);
    rows.push({ ...created, invoice_id: invoiceId, updated_at: clock.now().toISOString() });
    payments.push(payment);
  }
  await insertRows(trx, 'payments', rows);
  await addToCount(trx, 'payments', rows.length);
  return payments;
}

/**
 * Links payment `paymentId` to invoice `invoiceId` (`inv_…`), the invoice it settled (SPEC §9,
 * billing/settle.ts). No event of its own: `invoice.paid` (or the invoice's change) tells
 * it, and GET /api/payments/{id} shows the link. The payment's `payment.succeeded` was emitted
 * when it was recorded, before settlement, so that event's `invoice_id` is still null.
 */
export async function linkPaymentToInvoice(
  trx: Transaction<Database>,
  clock: Clock,
  paymentId: string,
  invoiceId: string,
): Promise<void> {
  await trx
    .updateTable('payments')
    .set({ invoice_id: invoiceId, updated_at: clock.now().toISOString() })
    .where('id', '=', paymentId)
    .execute();
}

/** A refund as a provider reported it. */
export interface RefundInput {
  reference: string;
  /** Minor units, above 0. */
  amount: number;
  currency: string;
  /** `failed`: it failed or was cancelled (reverses a success). */
  status: Exclude<RefundStatus, 'pending'>;
  /** ISO 8601. */
  occurredAt: string;
  /** Our refund id (`re_…`) when the provider carries it back (Stripe refund metadata `refund_id`). */
  requestReference?: string | null;
  /** Settles the oldest pending API refund of the same amount when nothing names it (Paystack). */
  matchByAmount?: boolean;
}

/** What recording refund reports did: the payment after, or why nothing was written. */
export type RefundRecording = { refused: false; payment: Payment } | { refused: true; reason: string };

/**
 * Records refund reports of `payment` (locked by the caller; must not be `failed`), all or
 * nothing: planRefunds (payments.refund-totals.ts) decides every report against the payment's
 * recorded refunds first, and a refund that would take the succeeded sum above `amount` (or
 * whose reference belongs to another payment) refuses the whole batch, nothing written.
 * Otherwise refunds are inserted / marked failed / pending API refunds settled (SPEC §10: the
 * report's status, reference and time; never a second row), then `amount_refunded` is
 * recomputed from the rows (the sum of succeeded refunds) with the status to match. Emits
 * `payment.refunded` when a refund newly succeeded and `payment.refund_failed` when a
 * succeeded or pending one failed (data: the payment after). SPEC §5 "Refunds".
 */
export async function recordRefundReports(
  trx: Transaction<Database>,
  clock: Clock,
  payment: PaymentRow,
  refunds: RefundInput[],
): Promise<RefundRecording> {
  const references = refunds.map((refund) => refund.reference);
  const rows = await trx
    .selectFrom('refunds')
    .select(['id', 'payment_id', 'provider_reference', 'amount', 'status', 'provider_refund_id'])
    .where((eb) =>
      eb.or([
        eb('payment_id', '=', payment.id),
        eb.and([eb('provider', '=', payment.provider), eb('provider_reference', 'in', references)]),
      ]),
    )
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  const elsewhere = rows.find((row) => row.payment_id !== payment.id);
  if (elsewhere) {
    return {
      refused: true,
      reason: `refund ${elsewhere.provider_reference} is recorded for another payment (${elsewhere.payment_id})`,
    };
  }
  const recorded = rows.map((row) => ({
    reference: row.provider_reference,
    amount: Number(row.amount),
    status: row.status,
    // Only API refunds are ever pending; their own id is what Stripe's metadata carries back.
    requestId: row.id,
    answered: row.provider_refund_id !== null,
  }));
  const plan = planRefunds({ id: payment.id, amount: Number(payment.amount) }, recorded, refunds);
  if (!plan.accepted) return { refused: true, reason: plan.reason };

  const now = clock.now().toISOString();
  let inserted = 0;
  let succeeded = false;
  let failed = false;
  for (const change of plan.changes) {
    if (change.action === 'insert') {
      const refund = change.refund;
      await trx
        .insertInto('refunds')
        .values({
          id: newId('refund'),
          payment_id: payment.id,
          provider: payment.provider,
          provider_reference: refund.reference,
          amount: refund.amount,
          currency: refund.currency,
          status: refund.status,
          refunded_at: refund.occurredAt,
          created_at: now,
          updated_at: now,
          test_clock_id: clock.testClockId ?? null,
        })
        .execute();
      inserted += 1;
      if (refund.status === 'succeeded') succeeded = true;
    } else if (change.action === 'settle') {
      const { report } = change;
      await trx
        .updateTable('refunds')
        .set({
          status: report.status,
          provider_reference: report.reference,
          refunded_at: report.status === 'succeeded' ? report.occurredAt : null,
          updated_at: now,
        })
        .where('payment_id', '=', payment.id)
        .where('provider_reference', '=', change.refund.reference)
        .execute();
      if (report.status === 'succeeded') succeeded = true;
      else failed = true;
    } else {
      await trx
        .updateTable('refunds')
        .set({ status: 'failed', updated_at: now })
        .where('provider', '=', payment.provider)
        .where('provider_reference', '=', change.refund.reference)
        .execute();
      failed = true;
    }
  }

  let result = pickFields(paymentSchema, payment);
  if (succeeded || failed) {
    // The one rule, from the rows themselves: amount_refunded = the succeeded refunds' sum.
    const refunded = await sumSucceededRefunds(trx, payment.id);
    const updated = await updatePayment(trx, clock, payment, {
      amount_refunded: refunded,
      status: statusAfterRefunds(Number(payment.amount), refunded),
    });
    result = pickFields(paymentSchema, updated);
    if (succeeded) await emitEvent(trx, clock, 'payment.refunded', result);
    if (failed) await emitEvent(trx, clock, 'payment.refund_failed', result);
  }
  // Counted after the events (see insertPayment: one lock order for the shared counters).
  if (inserted > 0) await addToCount(trx, 'refunds', inserted);
  return { refused: false, payment: result };
}
