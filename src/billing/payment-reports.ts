// What a reported payment, refund or link of two references does (SPEC §5), whoever reports
// it: a provider event handed over by the inbox, or the answer to one of our own charges
// (charges.ts). Attribute, lock the subscriptions, record the payment (one per provider
// reference), save a reusable method, and move the subscription through its invoices. The
// caller owns the transaction.
import type { Transaction } from 'kysely';
import type { Database } from '../db/database.ts';
import type { Config } from '../config.ts';
import type { Clock } from '../shared/clock.ts';
import { isProviderName } from '../shared/provider-names.ts';
import { repointCasePayments } from '../modules/dunning/dunning.cases.ts';
import { rememberPaymentMethod } from '../modules/payment-methods/payment-methods.ts';
import { recordPaymentReport, recordRefundReports } from '../modules/payments/payments.recording.ts';
import { findRefundRequest, refundableOf, startRefundRequest } from '../modules/payments/payments.refund-requests.ts';
import type { PaymentRow } from '../db/tables/payments.table.ts';
import { CARD_VERIFICATION_PURPOSE } from './payment-method-setup.ts';
import {
  lockPaymentByReference,
  lockPaymentLink,
  lockPaymentReference,
  recordPaymentLink,
} from '../modules/payments/payments.references.ts';
import { lockSubscription } from '../modules/subscriptions/subscriptions.lifecycle.ts';
import { applyFailedPayment, applySuccessfulPayment } from './subscription-payments.ts';
import { attributePayment } from './attribution.ts';
import type { PaymentBatch } from './payment-batch.ts';
import { type ProviderEvent, UnusableEventError } from '../providers/provider.ts';
import { withClockForCustomer } from '../modules/test-clocks/test-clocks.time.ts';

/** What processing needs besides the database: the clock, and config for dunning (Deps fits). */
export interface ProcessingContext {
  clock: Clock;
  config: Readonly<Config>;
  /**
   * Applies the reports held until the payment `reference` was known and paid (the inbox's
   * held refunds), inside `trx`. Entry points that can hold reports pass it; the core calls
   * it when a payment becomes paid, by a provider event or by our own charge's answer.
   */
  releaseHeld?: (trx: Transaction<Database>, provider: string, reference: string) => Promise<void>;
  /**
   * Which of `references` have reports held for them (keys `provider` + U+0000 + reference),
   * read in one statement under the references' locks: a batch of our own charges records
   * those whose payment releases nothing together (charges.batch.ts). Given with releaseHeld.
   */
  heldReferences?: (
    trx: Transaction<Database>,
    references: readonly { provider: string; reference: string }[],
  ) => Promise<Set<string>>;
  /**
   * What the batch this report is processed in read for all its events beforehand
   * (payment-batch.ts loadPaymentBatch): answers used instead of a read of the report's own.
   */
  batch?: PaymentBatch;
}

export type PaymentEvent = Extract<ProviderEvent, { kind: 'payment_succeeded' | 'payment_failed' }>;
export type RefundEvent = Extract<ProviderEvent, { kind: 'refunds' }>;
export type LinkEvent = Extract<ProviderEvent, { kind: 'payment_linked' }>;
export type MethodSavedEvent = Extract<ProviderEvent, { kind: 'method_saved' }>;

/**
 * A payment report: attribute it, record it (one payment per provider reference), and
 * move the subscription — success activates/renews, failure marks past_due (dunning hooks
 * in there) — exactly when the payment changed in a way that matters to it; a payment that
 * became paid releases the reports held for it (ProcessingContext.releaseHeld). The one path every payment report takes:
 * provider events, and the answers to the service's own charges (charges.ts), so
 * a charge and its webhook converge to one payment whichever is recorded first. Throws
 * UnusableEventError when the report cannot be recorded (another currency than the payment's).
 */
export async function recordPaymentEvent(
  trx: Transaction<Database>,
  realCtx: ProcessingContext,
  provider: string,
  event: PaymentEvent,
): Promise<void> {
  const report = event.payment;
  const locked =
    realCtx.batch?.takePayment(provider, report.reference) ??
    (await lockPaymentReference(trx, provider, report.reference));
  const existing = locked.payment;
  const needsAttribution = !existing || existing.customer_id === null || existing.subscription_id === null;
  const attributed = needsAttribution
    ? await attributePayment(trx, realCtx.clock, provider, report, existing?.currency ?? null, realCtx.batch)
    : { customerId: null, subscriptionId: null, planCurrency: null };
  // A card verification (SPEC §10 "Adding a method") belongs to its customer only: it pays no
  // subscription's invoice, so it never settles one nor becomes credit.
  const verification = provider === 'paystack' && report.metadata.purpose === CARD_VERIFICATION_PURPOSE;
  const who = verification ? { ...attributed, subscriptionId: null } : attributed;
  // A test clock's customer's payment is recorded and applied at the clock's time (SPEC §11).
  const ctx = await withClockForCustomer(trx, realCtx, existing?.customer_id ?? who.customerId);
  const { clock } = ctx;
  // The report's own currency first: recording refuses one that differs from the payment's.
  const currency = report.currency ?? existing?.currency ?? who.planCurrency;
  if (currency === null) {
    throw new UnusableEventError('currency is missing and no subscription plan names one');
  }
  // Lock the subscription(s) this payment may move before its event takes the shared event
  // counter: the subscription routes lock the row first too, so the two cannot deadlock.
  await lockSubscriptions(trx, [existing?.subscription_id, who.subscriptionId]);
  const status = event.kind === 'payment_succeeded' ? 'succeeded' : 'failed';
  const change = await recordPaymentReport(
    trx,
    clock,
    locked,
    {
      provider,
      reference: report.reference,
      amount: report.amount,
      currency,
      failureReason: report.failureReason,
      occurredAt: report.occurredAt,
      customerId: who.customerId,
      subscriptionId: who.subscriptionId,
    },
    status,
  );
  if (change.refused) throw new UnusableEventError(change.reason);
  const { payment } = change;
  if (status === 'succeeded') await saveReusableMethod(trx, ctx, provider, report, payment.customer_id);
  if (verification) {
    if (payment.status === 'succeeded') await refundVerificationCharge(trx, ctx, payment);
  } else if (payment.subscription_id !== null) {
    const facts = {
      paymentId: payment.id,
      amount: payment.amount,
      currency: payment.currency,
      occurredAt: report.occurredAt,
      // The invoice the integration's checkout named (SPEC §9: it wins when valid).
      invoiceId: report.metadata.invoice_id ?? null,
      // A charge of ours names its attempt (SPEC §10): paying the invoice finishes it.
      identity: { provider, reference: payment.provider_reference, attemptId: report.metadata.payment_attempt_id },
    };
    if (status === 'succeeded' && (change.becameSucceeded || change.subscriptionAttached)) {
      await applySuccessfulPayment(trx, ctx, payment.subscription_id, facts);
    }
    if (status === 'failed' && (change.becameFailed || change.subscriptionAttached)) {
      await applyFailedPayment(trx, ctx, payment.subscription_id, facts);
    }
  }
  if (change.becameSucceeded) await realCtx.releaseHeld?.(trx, provider, payment.provider_reference);
}

/**
 * SPEC §10: the reusable method a succeeded payment used is saved for the payment's customer
 * (in the payment's transaction; a card already saved stays as it is: rememberPaymentMethod).
 * Nothing is saved for a payment no customer is
 * attributed to, or without DATA_ENCRYPTION_KEY (set whenever a provider has an API key; without
 * one nothing could charge the method, and its credential could not be stored encrypted).
 */
async function saveReusableMethod(
  trx: Transaction<Database>,
  ctx: ProcessingContext,
  provider: string,
  report: PaymentEvent['payment'],
  customerId: string | null,
): Promise<void> {
  const method = report.method;
  if (!method || customerId === null || ctx.config.dataEncryptionKey === undefined) return;
  if (!isProviderName(provider)) return;
  const saved = ctx.batch?.methodSaved(customerId, provider, method.fingerprint);
  await rememberPaymentMethod(trx, ctx, { ...method, customerId, provider }, saved);
}

/**
 * A Paystack card verification's money goes back (SPEC §10 "Adding a method"): a `pending`
 * refund of all that may still be refunded on `payment` (locked by the caller), through the
 * API refund path — the worker asks Paystack at once (resolve_unknown_refunds: looked up by
 * our id before it is sent), and Paystack's refund event settles it. Exactly once: the refund
 * is keyed by the payment (`request_key`), so a repeated `charge.success` finds it and adds
 * nothing; nothing is started when nothing remains to refund.
 */
async function refundVerificationCharge(
  trx: Transaction<Database>,
  ctx: ProcessingContext,
  payment: PaymentRow,
): Promise<void> {
  const requestKey = `${CARD_VERIFICATION_PURPOSE}:${payment.id}`;
  if (await findRefundRequest(trx, requestKey)) return;
  const { refundable } = await refundableOf(trx, payment);
  if (refundable === 0) return;
  await startRefundRequest(trx, ctx.clock, payment, {
    amount: refundable,
    reason: 'card verification',
    requestKey,
    // Due for the worker at once: no caller of ours is asking the provider for it.
    leaseMs: 0,
  });
}

/**
 * A method saved without a payment (Stripe `setup_intent.succeeded`, SPEC §10 "Adding a
 * method"): saved for the live customer `metadata.customer_id` names, and made the default as
 * any new method (rememberPaymentMethod: a method already saved stays as it is, so a repeated
 * event changes nothing). No payment, invoice or balance is touched. Throws UnusableEventError
 * when the customer is unknown or deleted, or DATA_ENCRYPTION_KEY is not set.
 */
export async function recordSavedMethod(
  trx: Transaction<Database>,
  realCtx: ProcessingContext,
  provider: string,
  event: MethodSavedEvent,
): Promise<void> {
  const named = event.metadata.customer_id ?? '';
  const customer = await trx
    .selectFrom('customers')
    .select('id')
    .where('id', '=', named)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  if (!customer) throw new UnusableEventError(`customer ${named} is unknown or deleted`);
  if (realCtx.config.dataEncryptionKey === undefined || !isProviderName(provider)) {
    throw new UnusableEventError('payment methods cannot be saved: DATA_ENCRYPTION_KEY is not set');
  }
  const ctx = await withClockForCustomer(trx, realCtx, customer.id);
  await rememberPaymentMethod(trx, ctx, { ...event.method, customerId: customer.id, provider });
}

/**
 * Refund reports (succeeded or failed). Returns the payment reference to wait for when its
 * payment is not recorded (or not paid) yet: the row is held and applied when the payment
 * succeeds, so any arrival order ends in the same state. Throws UnusableEventError when a
 * refund's currency differs from the payment's, or recording refuses the reports (a refund
 * beyond what remains of the payment): nothing is written and the inbox row keeps the reason.
 */
export async function recordRefunds(
  trx: Transaction<Database>,
  ctx: ProcessingContext,
  provider: string,
  event: RefundEvent,
): Promise<string | null> {
  const payment = await lockPaymentByReference(trx, provider, event.paymentReference);
  if (!payment || payment.status === 'failed') return event.paymentReference;
  const { clock } = await withClockForCustomer(trx, ctx, payment.customer_id);
  for (const { currency } of event.refunds) {
    if (currency !== payment.currency) {
      throw new UnusableEventError(`refund currency ${currency} differs from the payment's ${payment.currency}`);
    }
  }
  const outcome = await recordRefundReports(trx, clock, payment, event.refunds);
  if (outcome.refused) throw new UnusableEventError(outcome.reason);
  return null;
}

/**
 * Two references of one payment (Stripe `invoice_payment.paid`): from now on both land on
 * one payment, and payments already recorded under each become one (payments.references.ts).
 * The subscription moves only if the merged payment owes it an effect no report applied
 * (SPEC §5: one period, one dunning attempt per provider payment); a merged payment that is
 * not failed releases the reports held for it. Refused (UnusableEventError, nothing written)
 * when the two cannot be one payment.
 */
export async function linkPaymentReferences(
  trx: Transaction<Database>,
  ctx: ProcessingContext,
  provider: string,
  event: LinkEvent,
): Promise<void> {
  const link = await lockPaymentLink(trx, provider, event.reference, event.canonicalReference);
  if (link.conflict !== null) throw new UnusableEventError(link.conflict);
  await lockSubscriptions(trx, [link.aliasPayment?.subscription_id, link.canonicalPayment?.subscription_id]);
  const { payment, mergedPaymentId, owedEffect } = await recordPaymentLink(trx, ctx.clock, link);
  if (!payment) return;
  if (mergedPaymentId !== null) await repointCasePayments(trx, ctx.clock, mergedPaymentId, payment.id);
  if (payment.subscription_id !== null && owedEffect !== null) {
    const facts = {
      paymentId: payment.id,
      amount: payment.amount,
      currency: payment.currency,
      identity: { provider, reference: payment.provider_reference },
    };
    // The success owed is the paid report's, at its provider time (`paid_at`), so a stale
    // failure arriving later is still recognised as older. A failed row keeps no provider
    // time: its owed failure counts as the newest report.
    const paidAt = payment.paid_at ?? undefined;
    if (owedEffect === 'succeeded')
      await applySuccessfulPayment(trx, ctx, payment.subscription_id, { ...facts, occurredAt: paidAt });
    else await applyFailedPayment(trx, ctx, payment.subscription_id, facts);
  }
  if (payment.status !== 'failed') await ctx.releaseHeld?.(trx, provider, payment.provider_reference);
}

/** Locks the distinct subscriptions among `ids` in id order (one lock order for everyone). */
async function lockSubscriptions(
  trx: Transaction<Database>,
  ids: readonly (string | null | undefined)[],
): Promise<void> {
  const distinct = new Set(ids.filter((id): id is string => typeof id === 'string'));
  for (const id of [...distinct].sort()) await lockSubscription(trx, id);
}
