// Recording a batch of our own charges' answers (SPEC §10 step 3) when the common thing
// happened: the charge succeeded for all its invoice still owes, nothing else paid or touched
// it meanwhile. Such a charge is recorded exactly as the one-by-one path (charges.ts
// recordInTransaction → payment-reports.ts recordPaymentEvent → settle.ts) records it — the
// same payment, invoice, attempt, subscription and dunning rows, the same events in the same
// order per invoice — but what it reads is read for the whole batch at once, and each table is
// written in one statement. Any charge whose facts differ from that common case in any way
// (a payment under its reference already, another unresolved attempt, a partial or surplus
// amount, another currency, a stale success, a held refund, a subscription that does not
// move…) is left to the one-by-one path, in the same transaction.
import type { Transaction } from 'kysely';
import { inList } from '../db/bulk.ts';
import type { Database } from '../db/database.ts';
import { forUpdate } from '../db/locking.ts';
import type { Clock } from '../shared/clock.ts';
import { emitEvent } from '../modules/events/events.service.ts';
import { markInvoicesPaidInFull } from '../modules/invoices/invoices.lifecycle.ts';
import { isIdOf } from '../shared/ids.ts';
import { insertSettledPayments } from '../modules/payments/payments.recording.ts';
import { lockPaymentsByReferences, referenceKey } from '../modules/payments/payments.references.ts';
import { type PaymentAttemptRow, recordChargesSucceeded } from '../modules/payment-attempts/payment-attempts.ts';
import { toPaymentAttempt } from '../modules/payment-attempts/payment-attempts.schemas.ts';
import { findOpenCases, recoverCases } from '../modules/dunning/dunning.cases.ts';
import { transitionSubscriptionsOnPayment } from '../modules/subscriptions/subscriptions.lifecycle.ts';
import { nextStatus } from '../modules/subscriptions/subscriptions.status.ts';
import { testClockTime } from '../modules/test-clocks/test-clocks.time.ts';
import type { ProcessingContext } from './payment-reports.ts';
import { failureStands } from './subscription-payments.ts';
import type { InvoiceRow } from '../db/tables/invoices.table.ts';
import type { SubscriptionRow } from '../db/tables/subscriptions.table.ts';
import type { DunningCaseRow } from '../db/tables/dunning.table.ts';

/** A succeeded charge of a subscription's invoice, as the batch records it. */
export interface SucceededCharge {
  /** The attempt this worker leased (charges.ts ClaimedCharge.attempt). */
  attempt: PaymentAttemptRow;
  invoice: { id: string; customer_id: string; subscription_id: string };
  /** The provider's answer: its payment reference, object id, amount (minor units) and currency. */
  result: { reference: string; providerObjectId: string | null; amount: number; currency: string };
}

/** One charge the batch records, with what it read for it. */
interface Recordable {
  charge: SucceededCharge;
  clock: Clock;
  invoice: InvoiceRow;
  attempt: PaymentAttemptRow;
  subscription: SubscriptionRow;
  openCase: DunningCaseRow | undefined;
}

/**
 * Records those of `charges` that are the common case (see the header) in `trx`, the batch's
 * transaction: the caller holds the advisory locks of every reference (lockReferences, on
 * PostgreSQL), defers events and counts, and gives no two charges of one subscription. Reads
 * (and locks, on PostgreSQL) the charges' subscriptions, invoices, unresolved attempts,
 * payments, customers, plans, test clocks, open dunning cases and held reports in one
 * statement each; writes the payments, invoices, attempts, subscriptions and recovered cases
 * in one statement each (per distinct time). `occurredAt` (ISO 8601) is the payments'
 * provider time, as the one-by-one path gives it. Returns the attempt ids recorded; the
 * caller records the others one by one. `alsoLock`: the batch's other subscriptions and
 * invoices, locked with these (PostgreSQL) so the batch takes every subscription lock before
 * any invoice lock. Errors: the database's (the caller's fallback).
 */
export async function recordSucceededCharges(
  trx: Transaction<Database>,
  ctx: ProcessingContext,
  charges: readonly SucceededCharge[],
  occurredAt: string,
  alsoLock: { subscriptionIds: readonly string[]; invoiceIds: readonly string[] } = {
    subscriptionIds: [],
    invoiceIds: [],
  },
): Promise<Set<string>> {
  const recorded = new Set<string>();
  if (charges.length === 0) return recorded;
  // Held reports are applied by the one-by-one path; without a way to ask, every charge goes there.
  if (ctx.releaseHeld && !ctx.heldReferences) return recorded;
  const ids = (pick: (charge: SucceededCharge) => string) => [...new Set(charges.map(pick))].sort();
  const subscriptionIds = ids((charge) => charge.invoice.subscription_id);
  const invoiceIds = ids((charge) => charge.invoice.id);
  const customerIds = ids((charge) => charge.invoice.customer_id);
  const references = charges.map(({ attempt, result }) => ({
    provider: attempt.provider,
    reference: result.reference,
  }));

  // Lock order as the one-by-one path: subscriptions, invoices, attempts (references first:
  // the caller); the batch's other charges' rows too, so every subscription is locked before
  // any invoice, each kind in id order.
  const subscriptions = byId(
    await forUpdate(
      trx
        .selectFrom('subscriptions')
        .selectAll()
        .where(inList(trx, 'id', [...new Set([...subscriptionIds, ...alsoLock.subscriptionIds])]))
        .orderBy('id'),
      trx,
    ).execute(),
  );
  const invoices = byId(
    await forUpdate(
      trx
        .selectFrom('invoices')
        .selectAll()
        .where(inList(trx, 'id', [...new Set([...invoiceIds, ...alsoLock.invoiceIds])]))
        .orderBy('id'),
      trx,
    ).execute(),
  );
  const unresolved = new Map<string, PaymentAttemptRow[]>();
  const attemptRows = await forUpdate(
    trx
      .selectFrom('invoice_payment_attempts')
      .selectAll()
      .where(inList(trx, 'invoice_id', invoiceIds))
      .where('kind', '=', 'charge')
      .where('status', 'in', ['pending', 'unknown'])
      .orderBy('id'),
    trx,
  ).execute();
  for (const row of attemptRows) unresolved.set(row.invoice_id, [...(unresolved.get(row.invoice_id) ?? []), row]);
  const payments = await lockPaymentsByReferences(trx, references);
  const customers = byId(
    await trx
      .selectFrom('customers')
      .select(['id', 'deleted_at', 'test_clock_id'])
      .where(inList(trx, 'id', customerIds))
      .execute(),
  );
  const planIds = [...new Set([...subscriptions.values()].map((row) => row.plan_id))];
  const plans = new Set(
    planIds.length === 0
      ? []
      : (await trx.selectFrom('plans').select('id').where('id', 'in', planIds).execute()).map((row) => row.id),
  );
  const clockIds = ctx.config.testClocks
    ? [...new Set([...customers.values()].flatMap((row) => (row.test_clock_id === null ? [] : [row.test_clock_id])))]
    : [];
  const testClocks = new Map(
    clockIds.length === 0
      ? []
      : (await trx.selectFrom('test_clocks').select(['id', 'reached_time']).where('id', 'in', clockIds).execute()).map(
          (row) => [row.id, testClockTime(row.id, new Date(row.reached_time), ctx.clock)],
        ),
  );
  const openCases = await findOpenCases(trx, subscriptionIds);
  const held = ctx.heldReferences ? await ctx.heldReferences(trx, references) : new Set<string>();

  const batch: Recordable[] = [];
  for (const charge of charges) {
    const { attempt, invoice: named, result } = charge;
    const subscription = subscriptions.get(named.subscription_id);
    const invoice = invoices.get(named.id);
    const customer = customers.get(named.customer_id);
    const open = unresolved.get(named.id) ?? [];
    const payment = payments.get(referenceKey(attempt.provider, result.reference));
    if (!subscription || !invoice || !customer || customer.deleted_at !== null) continue;
    // Attribution by our metadata (attribution.ts): the subscription (with its plan) and the
    // live customer it names, one customer's.
    if (!isIdOf('subscription', subscription.id) || !isIdOf('customer', customer.id)) continue;
    if (subscription.customer_id !== customer.id || !plans.has(subscription.plan_id)) continue;
    // The payment is new, under its own reference; nothing waits for it.
    if (!payment || payment.aliasOf !== null || payment.locked?.payment !== undefined) continue;
    if (held.has(referenceKey(attempt.provider, result.reference))) continue;
    // This attempt is the invoice's one unresolved charge (settlement finishes it).
    if (open.length !== 1 || open[0]!.id !== attempt.id) continue;
    // The invoice is the one settled (the named one: this subscription's and customer's,
    // open, in the payment's currency), and the payment pays exactly what remains.
    if (invoice.status !== 'open' || invoice.subscription_id !== subscription.id) continue;
    if (invoice.customer_id !== customer.id || invoice.currency !== result.currency) continue;
    const remaining = Number(invoice.amount_due) - Number(invoice.amount_paid);
    if (remaining <= 0 || result.amount !== remaining) continue;
    // The subscription moves (applySuccessfulPayment), keeps its period, and the success is not stale.
    if (!nextStatus(subscription.status, 'payment_succeeded') || subscription.current_period_end === null) continue;
    if (failureStands(subscription, occurredAt)) continue;
    const clock =
      customer.test_clock_id === null || !ctx.config.testClocks ? ctx.clock : testClocks.get(customer.test_clock_id);
    if (!clock) continue;
    const openCase = openCases.get(subscription.id);
    const recovers = openCase && (openCase.invoice_id === null || openCase.invoice_id === invoice.id);
    batch.push({ charge, clock, invoice, attempt: open[0]!, subscription, openCase: recovers ? openCase : undefined });
  }
  if (batch.length === 0) return recorded;

  await insertSettledPayments(
    trx,
    batch.map(({ charge, clock }) => ({
      clock,
      input: {
        provider: charge.attempt.provider,
        reference: charge.result.reference,
        amount: charge.result.amount,
        currency: charge.result.currency,
        failureReason: null,
        occurredAt,
        customerId: charge.invoice.customer_id,
        subscriptionId: charge.invoice.subscription_id,
      },
      invoiceId: charge.invoice.id,
    })),
  );
  const paid = await markInvoicesPaidInFull(
    trx,
    ctx.config,
    batch.map(({ clock, invoice }) => ({ clock, row: invoice })),
  );
  // finishChargesOfPaidInvoice: the attempt is the payment's (Stripe's object id is the
  // PaymentIntent; Paystack's reference is our own).
  const attempts = await recordChargesSucceeded(
    trx,
    batch.map(({ clock, attempt, charge }) => ({
      clock,
      attempt,
      providerObjectId: charge.result.reference === attempt.reference ? null : charge.result.reference,
    })),
  );
  for (const [index, { clock }] of batch.entries()) {
    await emitEvent(trx, clock, 'invoice.payment_attempted', {
      invoice: paid[index],
      attempt: toPaymentAttempt(attempts[index]!),
    });
  }
  await transitionSubscriptionsOnPayment(
    trx,
    batch.map(({ clock, subscription }) => ({ clock, row: subscription, paidAt: occurredAt })),
  );
  await recoverCases(
    trx,
    batch.flatMap(({ clock, openCase }) => (openCase ? [{ clock, row: openCase }] : [])),
  );
  for (const { attempt } of batch) recorded.add(attempt.id);
  return recorded;
}

function byId<T extends { id: string }>(rows: readonly T[]): Map<string, T> {
  return new Map(rows.map((row) => [row.id, row]));
}
