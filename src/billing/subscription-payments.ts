// How payments move subscriptions (SPEC §4) and their dunning cases (SPEC §4): through the
// invoices they settle (settle.ts). Called by payment-reports.ts and pay-out-of-band.ts in the
// same transaction that records the payment. Reports may arrive in any order: the status follows
// the latest report by provider time (SPEC §5 stale reports), while every successful payment
// is still applied to invoices.
import type { Transaction } from 'kysely';
import type { Database } from '../db/database.ts';
import { closeOpenCase, type DunningContext, openOrCountDunningCase } from '../modules/dunning/dunning.cases.ts';
import type { InvoiceContext } from '../modules/invoices/invoices.lifecycle.ts';
import type { PaymentIdentity } from '../modules/payment-attempts/payment-attempts.ts';
import { countFailedAttempt, findSettlementTarget, settlePayment } from './settle.ts';
import { findPlan } from '../modules/plans/plans.service.ts';
import { nextStatus } from '../modules/subscriptions/subscriptions.status.ts';
import {
  lockSubscription,
  rememberPaymentTime,
  type Subscription,
  toSubscription,
  transitionSubscription,
} from '../modules/subscriptions/subscriptions.lifecycle.ts';
import type { SubscriptionRow } from '../db/tables/subscriptions.table.ts';

/**
 * What the payment-effect functions need to know about the payment that caused them, for
 * dunning (SPEC §4 dunning case: `payment_id`, `amount_due`, `currency`). `paymentId` is the
 * `pay_…` id of the recorded payment; `amount` is in minor units; `currency` is ISO 4217
 * upper case. Optional so lifecycle tests can call without a recorded payment.
 */
export interface PaymentFacts {
  paymentId: string | null;
  amount: number;
  currency: string;
  /**
   * ISO 8601: when the provider says the payment succeeded or failed. Orders reports that
   * arrive out of order (stale reports); without it the report is taken as the newest.
   */
  occurredAt?: string;
}

type Time = string | null | undefined;

/** True when ISO 8601 times `a` and `b` are both known and `a` is before `b`. */
function isBefore(a: Time, b: Time): boolean {
  return typeof a === 'string' && typeof b === 'string' && Date.parse(a) < Date.parse(b);
}

/** True when ISO 8601 times `a` and `b` are both known and `a` is not after `b`. */
function isNotAfter(a: Time, b: Time): boolean {
  return typeof a === 'string' && typeof b === 'string' && Date.parse(a) <= Date.parse(b);
}

/**
 * True when the latest failure applied to `row` is newer than a success that happened at
 * `at` (ISO 8601) and than every success applied: the status is the failure's, and stays so
 * (SPEC §5 stale reports).
 */
export function failureStands(row: SubscriptionRow, at: Time): boolean {
  const failedAt = row.last_payment_failed_at;
  return isBefore(at, failedAt) && !isNotAfter(failedAt, row.last_payment_succeeded_at);
}

/** What moving subscriptions by payments needs: the clock, dunning and invoice settings (Deps fits). */
export type PaymentContext = DunningContext & InvoiceContext;

/** A succeeded or failed payment, and the invoice it names (provider metadata `invoice_id`, POST …/pay). */
export interface InvoicedPaymentFacts extends PaymentFacts {
  /** The invoice (`inv_…`) the payer meant to pay; wins when valid (findSettlementTarget). */
  invoiceId?: string | null;
  /** The payment as its provider knows it: finishes the automatic charge it is (settleInvoice). */
  identity?: PaymentIdentity | null;
}

/**
 * A successful payment for subscription `id` (SPEC §4, §9, §12). The payment settles
 * invoices first (settle.ts settlePayment: the one it names, else the oldest payable one in
 * its currency; a surplus becomes the customer's credit; with nothing payable, the next
 * period's invoice is issued and settled — paying in advance). A partial payment stops there:
 * the invoice stays open and the subscription does not move until it is paid. A payment that
 * settles nothing — in another currency than what the subscription owes (or than its plan's,
 * when it owes nothing), or arriving after the invoice it names was voided — is recorded by
 * the caller and moves nothing. When an invoice is paid the subscription moves without
 * changing its period (the periods follow the billing cycle anchor, whenever they are paid):
 * `incomplete`, `trialing`, `past_due` and `unpaid` → `active` (`active` stays, with
 * `subscription.renewed`), and the open dunning case recovers when it chases that invoice (or
 * none). A subscription with no period yet (one created before invoices) takes the paid
 * invoice's. A payment for a `cancelled`, `incomplete_expired` or `paused` subscription still
 * settles an open/uncollectible invoice (its surplus becomes credit), but pays nothing in
 * advance and revives nothing. A success older (`payment.occurredAt`) than the latest failure
 * applied, when that failure is the latest report, still settles its invoice — money is
 * applied whatever the order — but moves neither the status nor the dunning case: the newer
 * failure stands. On a tie the success wins. Without `payment` (lifecycle tests) it pays
 * exactly what the oldest invoice owes, or the next period's invoice. `ctx` is the clock and
 * config (Deps fits). Returns the subscription after. Throws 404 `not_found` for an unknown id.
 */
export async function applySuccessfulPayment(
  trx: Transaction<Database>,
  ctx: PaymentContext,
  id: string,
  payment?: InvoicedPaymentFacts,
): Promise<Subscription> {
  const { clock } = ctx;
  const row = await lockSubscription(trx, id);
  const plan = await findPlan(trx, row.plan_id);
  if (!plan) throw new Error(`plan ${row.plan_id} of subscription ${row.id} is missing`);
  const movable = nextStatus(row.status, 'payment_succeeded') !== undefined;
  const settlement = await settlePayment(
    trx,
    ctx,
    { customerId: row.customer_id, subscriptionId: row.id },
    {
      paymentId: payment?.paymentId ?? null,
      amount: payment?.amount ?? null,
      currency: payment?.currency ?? plan.currency,
      invoiceId: payment?.invoiceId,
      identity: payment?.identity,
    },
    movable ? { row, plan } : undefined,
  );
  if (!settlement?.paid || !movable) return toSubscription(row);
  const paid = settlement.invoice;
  const stale = failureStands(row, payment?.occurredAt);
  await rememberPaymentTime(trx, row, 'last_payment_succeeded_at', payment?.occurredAt);
  if (stale) return toSubscription(row);
  const firstPeriod =
    row.current_period_end === null
      ? { current_period_start: paid.period_start, current_period_end: paid.period_end }
      : {};
  const subscription = await transitionSubscription(trx, clock, row, 'payment_succeeded', firstPeriod);
  // Paying in advance means nothing else was payable: a case still open chases an invoice a
  // stale success paid meanwhile (or none), so it recovers whatever it chases.
  await closeOpenCase(trx, clock, id, 'recovered', settlement.issued ? null : paid.id);
  return subscription;
}

/**
 * A failed payment for subscription `id`. The invoice it was for (the one it names, else the
 * oldest open/uncollectible one in its currency) counts one more `attempt_count` and emits
 * `invoice.payment_failed` (SPEC §9). Then the subscription: `active`/`trialing` →
 * `past_due`, and a `past_due` subscription has a dunning case: opened (`dunning.started`,
 * reason `payment_failed`, for that invoice and owing what remains of it — else the
 * payment's amount, or the plan's when `payment` is not given), or, when one is open,
 * counted as one more attempt. Other states are left as they are (no dunning while `paused`;
 * `unpaid` has exhausted its dunning; `incomplete` expires). A stale failure —
 * `payment.occurredAt` no later than the latest successful payment applied (SPEC §5) —
 * changes nothing: that period is paid. `ctx` is the clock and config (Deps fits). Returns
 * the subscription after. Throws 404 `not_found` for an unknown id.
 */
export async function applyFailedPayment(
  trx: Transaction<Database>,
  ctx: PaymentContext,
  id: string,
  payment?: InvoicedPaymentFacts,
): Promise<Subscription> {
  const row = await lockSubscription(trx, id);
  if (isNotAfter(payment?.occurredAt, row.last_payment_succeeded_at)) return toSubscription(row);
  const payer = { customerId: row.customer_id, subscriptionId: row.id };
  const target = payment ? await findSettlementTarget(trx, payer, payment.currency, payment.invoiceId) : undefined;
  const invoice = target?.kind === 'invoice' ? await countFailedAttempt(trx, ctx, target.row) : undefined;
  const subscription = nextStatus(row.status, 'payment_failed')
    ? await transitionSubscription(trx, ctx.clock, row, 'payment_failed')
    : toSubscription(row);
  if (subscription.status !== 'past_due') return subscription;
  // Only a failure that holds the subscription past_due orders later successes.
  await rememberPaymentTime(trx, row, 'last_payment_failed_at', payment?.occurredAt);
  const owed = invoice
    ? { amount: invoice.amount_remaining, currency: invoice.currency }
    : (payment ?? (await planPrice(trx, row.plan_id)));
  await openOrCountDunningCase(trx, ctx, row, {
    reason: 'payment_failed',
    paymentId: payment?.paymentId ?? null,
    amountDue: owed.amount,
    currency: owed.currency,
    invoiceId: invoice?.id ?? null,
  });
  return subscription;
}

/** The plan's price `{amount (minor units), currency}`; throws when the plan is missing. */
export async function planPrice(
  trx: Transaction<Database>,
  planId: string,
): Promise<{ amount: number; currency: string }> {
  const plan = await findPlan(trx, planId);
  if (!plan) throw new Error(`plan ${planId} is missing`);
  return { amount: plan.amount, currency: plan.currency };
}
