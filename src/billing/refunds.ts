// Refunds from the API (SPEC §10): POST /api/payments/{id}/refund asks Paystack or Stripe to
// return money. Exactly once, like the rest of collection: the `pending` refund row (our id =
// Stripe's Idempotency-Key, and in Paystack's merchant_note) is committed before the provider
// is called; a request that got no usable answer is resumed — never started again — by a retry
// with the same Idempotency-Key: the refund looked up by our own id before anything is sent
// again (Paystack has no idempotency on POST /refund; Stripe keeps keys only 24 hours). The
// provider's event settles the row (payments.recording.ts), matched to it, never a second row.
import { createHash } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import type { Deps } from '../deps.ts';
import type { Database } from '../db/database.ts';
import { transactionWithRetry } from '../db/transaction.ts';
import { AppError, NotFoundError, ProviderUnavailableError, StateConflictError } from '../http/errors.ts';
import { type Clock, systemClock } from '../shared/clock.ts';
import { idTime, isIdOf } from '../shared/ids.ts';
import { isProviderName, type ProviderName } from '../shared/provider-names.ts';
import { lockPaymentByReference } from '../modules/payments/payments.references.ts';
import {
  claimRefundRequest,
  findRefundRequest,
  markRefundUnknown,
  recordRefundAnswer,
  refundableOf,
  refuseRefundRequest,
  startRefundRequest,
} from '../modules/payments/payments.refund-requests.ts';
import { MANUAL_PROVIDER, type RefundRow } from '../db/tables/payments.table.ts';
import { type Refund } from '../modules/payments/payments.schemas.ts';
import { merchantNoteOf } from '../providers/paystack/api.ts';
import { ProviderCallError, PROVIDER_DISPLAY_NAMES } from '../providers/provider-api.ts';
import { API_KEY_VARIABLE } from '../providers/provider-apis.ts';
import type { RefundRequestInput } from './refunds.schemas.ts';
import { clockFor, withClockForCustomer } from '../modules/test-clocks/test-clocks.time.ts';

/** Stripe's `reason` values (POST /v1/refunds); any other reason travels in the metadata. */
const STRIPE_REASONS = ['duplicate', 'fraudulent', 'requested_by_customer'] as const;
type StripeReason = (typeof STRIPE_REASONS)[number];

/** `reason` as Stripe's enum when it is one of its values (case, spaces and hyphens aside). */
export function stripeReasonOf(reason: string | null): StripeReason | undefined {
  if (reason === null) return undefined;
  const normalized = reason
    .trim()
    .toLowerCase()
    .replace(/[\s-]+/g, '_');
  return (STRIPE_REASONS as readonly string[]).includes(normalized) ? (normalized as StripeReason) : undefined;
}

/**
 * The key a request's refund is found by when it is retried: hex SHA-256 of the API key's id,
 * the Idempotency-Key and the request's fingerprint (method, path, body) — the same scope as
 * SPEC §2's stored responses. Null without an Idempotency-Key.
 */
export function refundRequestKey(claim: { principalId: string; key: string; fingerprint: string } | undefined) {
  if (!claim) return null;
  return createHash('sha256').update(`${claim.principalId}\n${claim.key}\n${claim.fingerprint}`).digest('hex');
}

/**
 * How long one caller may be asking the provider for a refund before another may (the lease):
 * a whole call (PROVIDER_TIMEOUT) and a minute more.
 */
export function refundLeaseMs(deps: Pick<Deps, 'config'>): number {
  return deps.config.providerTimeoutMs + 60_000;
}

/** After no usable answer, when the worker asks the provider again (unless a retry does first). */
export const RESUME_DELAY_MS = 60_000;

/** What the provider is asked, decided under the payment's lock. */
export interface RefundCall {
  refund: RefundRow;
  provider: ProviderName;
  /** The payment's provider reference: Paystack's transaction reference, Stripe's PaymentIntent. */
  paymentReference: string;
  /** True when this request resumes a refund whose earlier call got no usable answer. */
  resumed: boolean;
  /**
   * The refund's time (SPEC §11): its customer's test clock (reached_time), else the real
   * clock. Stamps the row, its lease and `resume_at`.
   */
  clock: Clock;
}

/**
 * The clock refund `refund` is stamped with: its test clock's reached time (clockFor), or
 * `deps.clock` for a real-time refund (no read).
 */
export function refundClock(
  db: Kysely<Database> | Transaction<Database>,
  deps: Pick<Deps, 'clock'>,
  refund: Pick<RefundRow, 'test_clock_id'>,
): Promise<Clock> {
  return clockFor(db, deps, refund.test_clock_id);
}

/**
 * Refunds `input.amount` (minor units; default: all that may still be refunded) of payment
 * `paymentId` through its provider → the refund, `pending` until the provider's event settles
 * it (202). `requestKey` (refundRequestKey) makes a retry after no usable answer resume the
 * same refund. Throws 404 `not_found` (unknown payment); 422 `invalid_state` (a `manual`
 * payment, a provider without API key, an amount above what may still be refunded, the
 * provider refusing the key or the request — the refund is then `failed`); 409
 * `validation_error` (a failed payment, or nothing left to refund: amount − succeeded −
 * pending is 0); 503 `internal_error` (no usable answer in PROVIDER_TIMEOUT: the refund stays
 * `pending`; retry with the same Idempotency-Key).
 */
export async function refundPayment(
  deps: Deps,
  paymentId: string,
  input: RefundRequestInput,
  requestKey: string | null,
): Promise<Refund> {
  const call = await transactionWithRetry(deps.db, (trx) => startRefund(deps, trx, paymentId, input, requestKey));
  if (call.refund.status !== 'pending' || call.refund.provider_refund_id !== null) return call.refund;
  // A retry: ask the provider only if nobody (the worker, another retry) is asking right now;
  // otherwise the refund is on its way and is answered as it stands.
  if (call.resumed && !(await claimRefundRequest(deps.db, call.clock, call.refund, refundLeaseMs(deps)))) {
    return call.refund;
  }
  return resolveRefund(deps, call);
}

/**
 * Asks the provider for `call`'s refund (its lease held by the caller) and records the
 * outcome: the provider's id (→ the refund, still `pending`), a refusal (the refund `failed`;
 * throws 422 `invalid_state`), or no usable answer (due again in RESUME_DELAY_MS for the
 * worker; throws 503 `internal_error`). `details`: provider, refund_id, reason,
 * provider_status, provider_code.
 */
export async function resolveRefund(deps: Deps, call: RefundCall): Promise<Refund> {
  try {
    const providerRefundId = await askProvider(deps, call);
    return await recordRefundAnswer(deps.db, call.clock, call.refund, providerRefundId);
  } catch (error) {
    if (!(error instanceof ProviderCallError)) throw error;
    const details = {
      provider: error.provider,
      refund_id: call.refund.id,
      reason: error.failure,
      provider_status: error.providerStatus,
      provider_code: error.providerCode,
    };
    if (error.outcomeUnknown) {
      const resumeAt = new Date(call.clock.now().getTime() + RESUME_DELAY_MS).toISOString();
      await markRefundUnknown(deps.db, call.clock, call.refund, resumeAt);
      throw new ProviderUnavailableError(
        `${error.message}; the refund ${call.refund.id} stays pending: retry with the same Idempotency-Key`,
        details,
      );
    }
    await refuseRefundRequest(deps.db, call.clock, call.refund, error.message);
    throw new AppError('invalid_state', error.message, details);
  }
}

/**
 * Under the payment's reference lock: the refund an earlier request with the same key made
 * (resumed), or the checks and a new `pending` refund. Throws the errors refundPayment lists.
 */
async function startRefund(
  deps: Deps,
  trx: Transaction<Database>,
  paymentId: string,
  input: RefundRequestInput,
  requestKey: string | null,
): Promise<RefundCall> {
  const found = isIdOf('payment', paymentId)
    ? await trx.selectFrom('payments').selectAll().where('id', '=', paymentId).executeTakeFirst()
    : undefined;
  if (!found) throw new NotFoundError('payment', paymentId);
  if (found.provider === MANUAL_PROVIDER || !isProviderName(found.provider)) {
    throw new AppError(
      'invalid_state',
      `payment ${found.id} was recorded out of band (provider ${found.provider}): refund it the same way`,
    );
  }
  const provider = found.provider;
  // The payment's reference lock, as its events' processing takes it: a refund request and a
  // refund event of one payment take turns (db/locking.ts; payments.references.ts).
  const payment = await lockPaymentByReference(trx, provider, found.provider_reference);
  if (!payment || payment.id !== found.id) throw new NotFoundError('payment', paymentId);

  if (requestKey !== null) {
    const earlier = await findRefundRequest(trx, requestKey);
    if (earlier) {
      const clock = await refundClock(trx, deps, earlier);
      return { refund: earlier, provider, paymentReference: payment.provider_reference, resumed: true, clock };
    }
  }
  if (payment.status === 'failed') {
    throw new StateConflictError(`payment ${payment.id} cannot be refunded in its current state (failed)`);
  }
  if (!deps.providers[provider]) {
    throw new AppError(
      'invalid_state',
      `${PROVIDER_DISPLAY_NAMES[provider]} cannot refund payments: ${API_KEY_VARIABLE[provider]} is not set`,
    );
  }
  const { refundable, refunded, pending } = await refundableOf(trx, payment);
  const sums = `${payment.amount} paid, ${refunded} refunded, ${pending} pending`;
  if (refundable === 0) {
    throw new StateConflictError(
      `payment ${payment.id} cannot be refunded in its current state (nothing remains: ${sums})`,
    );
  }
  const amount = input.amount ?? refundable;
  if (amount > refundable) {
    throw new AppError(
      'invalid_state',
      `amount ${amount} exceeds the ${refundable} that may still be refunded on payment ${payment.id} (${sums})`,
      { refundable },
    );
  }
  // A test clock customer's refund lives on the clock's time (SPEC §11); the clock's id goes
  // on the row, so the job resolving it runs in that clock's scope.
  const { clock } = await withClockForCustomer(trx, deps, payment.customer_id);
  const refund = await startRefundRequest(trx, clock, payment, {
    amount,
    reason: input.reason ?? null,
    requestKey,
    leaseMs: refundLeaseMs(deps),
  });
  return { refund, provider, paymentReference: payment.provider_reference, resumed: false, clock };
}

/**
 * The window a Paystack look-up lists (ISO 8601), in Paystack's time — real time, whatever
 * clock stamps our row (SPEC §11): from a minute before our refund id was made (the first
 * call came after it) to a minute after now; the minutes cover the two clocks' skew. A fixed
 * end keeps the list still while its pages are read.
 */
export function lookupWindow(refundId: string, now: Date = systemClock.now()): { from: string; to: string } {
  return {
    from: new Date(idTime(refundId).getTime() - 60_000).toISOString(),
    to: new Date(now.getTime() + 60_000).toISOString(),
  };
}

/**
 * Asks the provider for the refund; returns the provider's refund id. A resumed refund is
 * looked up first, by our own id only — Paystack: the marker ending merchant_note
 * (providers/paystack/api.ts findRefund); Stripe: `metadata.refund_id` among the PaymentIntent's
 * refunds (providers/stripe/api.ts findRefund) — and sent again (Stripe: with the same Idempotency-Key)
 * only when the look-up PROVES the provider has none; a look-up that proves nothing throws
 * (outcome unknown: nothing sent). SPEC §10 "Refunds from the API".
 */
async function askProvider(deps: Deps, call: RefundCall): Promise<string> {
  const { refund } = call;
  if (call.provider === 'paystack') {
    const paystack = deps.providers.paystack;
    if (!paystack) throw missingKey('paystack');
    const note = merchantNoteOf(refund.reason, refund.id);
    if (call.resumed) {
      const found = await paystack.findRefund(call.paymentReference, refund.id, lookupWindow(refund.id));
      if (found) return found.id;
    }
    const created = await paystack.createRefund({
      transaction: call.paymentReference,
      amount: Number(refund.amount),
      merchant_note: note,
    });
    return created.id;
  }
  const stripe = deps.providers.stripe;
  if (!stripe) throw missingKey('stripe');
  if (call.resumed) {
    // Stripe forgets an Idempotency-Key after 24 hours: ask by our refund id before sending.
    const found = await stripe.findRefund(call.paymentReference, refund.id);
    if (found) return found.id;
  }
  const reason = stripeReasonOf(refund.reason);
  const created = await stripe.createRefund({
    paymentIntent: call.paymentReference,
    amount: Number(refund.amount),
    ...(reason ? { reason } : {}),
    metadata: {
      refund_id: refund.id,
      payment_id: refund.payment_id,
      ...(refund.reason !== null && !reason ? { reason: refund.reason } : {}),
    },
    idempotencyKey: refund.id,
  });
  return created.id;
}

/**
 * A resumed refund whose provider has no key (any more): the provider may have made the
 * refund, so the outcome stays unknown (asked again once the key is back).
 */
function missingKey(provider: ProviderName): ProviderCallError {
  return new ProviderCallError(
    provider,
    'unavailable',
    `${PROVIDER_DISPLAY_NAMES[provider]} cannot refund payments: ${API_KEY_VARIABLE[provider]} is not set`,
  );
}
