// Stripe webhooks (https://docs.stripe.com/webhooks/signature): `Stripe-Signature` is
// `t=…,v1=…[,v1=…]`, HMAC-SHA256 of `${t}.${raw body}` keyed with the endpoint secret.
// Payloads are events `{id, type, created, data: {object}}`; `event.id` is the inbox key,
// and the payment/refund ids make two events about one object converge (SPEC §5).
import Stripe from 'stripe';
import {
  BodyNotJsonError,
  type EventIdentity,
  type PaymentReport,
  type ProviderAdapter,
  type ProviderEvent,
  type RefundReport,
  SignatureError,
  UnusableEventError,
} from '../provider.ts';
import {
  bodyHashKey,
  currencyCode,
  eventKey,
  flatMetadata,
  isObject,
  isoTime,
  type JsonObject,
  minorUnits,
  objectAt,
  requiredText,
  text,
} from '../provider-values.ts';

/** Seconds a signature's timestamp may lie from the receive time, either way (SPEC §5). */
export const STRIPE_TOLERANCE_SECONDS = 300;

/** The id of an expandable field: the string itself, or the expanded object's `id`. */
function idOf(value: unknown): string | null {
  return isObject(value) ? text(value.id) : text(value);
}

/**
 * Reads the header as Stripe's library does (comma-separated `key=value`), strictly: one
 * all-digit `t` and at least one `v1`. The library alone would read `t=12abc` as 12 and
 * accept any timestamp in the future; SPEC §5 wants both rejected.
 */
function signatureTimestamp(header: string): number {
  let timestamp: string | undefined;
  let timestamps = 0;
  let v1 = 0;
  for (const item of header.split(',')) {
    const at = item.indexOf('=');
    const key = at < 0 ? item : item.slice(0, at);
    if (key === 't') {
      timestamps += 1;
      timestamp = item.slice(at + 1);
    } else if (key === 'v1') v1 += 1;
  }
  if (timestamps !== 1 || timestamp === undefined || !/^\d{1,12}$/.test(timestamp)) {
    throw new SignatureError('invalid signature');
  }
  if (v1 === 0) throw new SignatureError('invalid signature');
  return Number(timestamp);
}

function paymentIntentReport(intent: JsonObject, failed: boolean, occurredAt: string): PaymentReport {
  const error = objectAt(intent.last_payment_error);
  return {
    reference: requiredText(intent.id, 'data.object.id'),
    amount: minorUnits(failed ? intent.amount : (intent.amount_received ?? intent.amount), 'data.object.amount'),
    currency: currencyCode(intent.currency, 'data.object.currency'),
    email: text(intent.receipt_email),
    name: null,
    metadata: flatMetadata(intent.metadata),
    subscriptionReference: null,
    failureReason: failed ? (text(error.message) ?? text(error.code) ?? 'payment failed') : null,
    occurredAt,
  };
}

/**
 * The PaymentIntent an invoice was paid with: `invoice.payment_intent` before API version
 * 2025-03-31, else the first of `invoice.payments` (when the payload includes them).
 */
function invoicePaymentIntent(invoice: JsonObject): string | null {
  const direct = idOf(invoice.payment_intent);
  if (direct !== null) return direct;
  const payments = objectAt(invoice.payments).data;
  if (!Array.isArray(payments)) return null;
  for (const entry of payments) {
    const intent = idOf(objectAt(objectAt(entry).payment).payment_intent);
    if (intent !== null) return intent;
  }
  return null;
}

/**
 * `invoice.paid` / `invoice.payment_failed`. The subscription is `invoice.subscription`
 * before API version 2025-03-31 and `invoice.parent.subscription_details.subscription`
 * since (its metadata moved the same way). The payment is the invoice's PaymentIntent
 * when the payload names it (so `payment_intent.succeeded` converges with it), else the
 * invoice itself.
 */
function invoiceReport(invoice: JsonObject, failed: boolean, occurredAt: string): PaymentReport {
  const details = objectAt(objectAt(invoice.parent).subscription_details);
  const legacyDetails = objectAt(invoice.subscription_details);
  return {
    reference: invoicePaymentIntent(invoice) ?? requiredText(invoice.id, 'data.object.id'),
    amount: minorUnits(failed ? invoice.amount_due : invoice.amount_paid, failed ? 'data.object.amount_due' : 'data.object.amount_paid'),
    currency: currencyCode(invoice.currency, 'data.object.currency'),
    email: text(invoice.customer_email),
    name: text(invoice.customer_name),
    metadata: {
      ...flatMetadata(legacyDetails.metadata),
      ...flatMetadata(details.metadata),
      ...flatMetadata(invoice.metadata),
    },
    subscriptionReference: idOf(invoice.subscription) ?? idOf(details.subscription),
    failureReason: failed
      ? (text(objectAt(invoice.last_finalization_error).message) ?? 'invoice payment failed')
      : null,
    occurredAt,
  };
}

function refundReport(refund: JsonObject, fallbackCurrency: unknown, occurredAt: string): RefundReport {
  const amount = minorUnits(refund.amount, 'refund amount');
  if (amount === 0) throw new UnusableEventError('refund amount must be above 0');
  return {
    reference: requiredText(refund.id, 'refund id'),
    amount,
    currency: currencyCode(refund.currency ?? fallbackCurrency, 'refund currency'),
    occurredAt: isoTime(refund.created, new Date(occurredAt)),
  };
}

/** `charge.refunded`: the charge with its running `amount_refunded`; `refunds` only on older API versions. */
function chargeRefunded(charge: JsonObject, occurredAt: string): ProviderEvent {
  const currency = currencyCode(charge.currency, 'data.object.currency');
  const listed = objectAt(charge.refunds).data;
  const refunds = (Array.isArray(listed) ? listed : [])
    .map(objectAt)
    .filter((refund) => refund.status === 'succeeded')
    .map((refund) => refundReport(refund, charge.currency, occurredAt));
  const totalRefunded = minorUnits(charge.amount_refunded, 'data.object.amount_refunded');
  if (totalRefunded === 0 && refunds.length === 0) return { kind: 'ignored', reason: 'nothing refunded' };
  return {
    kind: 'refund_succeeded',
    paymentReference: idOf(charge.payment_intent) ?? requiredText(charge.id, 'data.object.id'),
    refunds,
    totalRefunded,
    currency,
  };
}

/** `refund.created` / `refund.updated`: counts only once the refund has `status: succeeded`. */
function refundEvent(refund: JsonObject, occurredAt: string): ProviderEvent {
  const status = text(refund.status);
  if (status !== 'succeeded') return { kind: 'ignored', reason: `refund status ${status ?? 'missing'}` };
  const paymentReference = idOf(refund.payment_intent) ?? idOf(refund.charge);
  if (paymentReference === null) throw new UnusableEventError('data.object.payment_intent and data.object.charge are missing');
  const report = refundReport(refund, refund.currency, occurredAt);
  return {
    kind: 'refund_succeeded',
    paymentReference,
    refunds: [report],
    totalRefunded: null,
    currency: report.currency,
  };
}

export const stripe: ProviderAdapter = {
  name: 'stripe',
  signatureHeader: 'stripe-signature',

  secret: (config) => config.stripeWebhookSecret,

  verify(raw, headers, secret, now) {
    const header = headers['stripe-signature'];
    if (typeof header !== 'string' || header.trim() === '') throw new SignatureError('missing signature');
    const timestamp = signatureTimestamp(header);
    const nowSeconds = Math.floor(now.getTime() / 1000);
    if (Math.abs(nowSeconds - timestamp) > STRIPE_TOLERANCE_SECONDS) {
      throw new SignatureError('signature timestamp is outside the tolerance');
    }
    // The official verifier (constant-time compare, v1 only, any matching v1 passes),
    // given the injected clock's time as the receive time. We verify, then parse
    // ourselves: constructEvent would parse too, but could not tell "not JSON" (400) apart.
    try {
      Stripe.webhooks.signature!.verifyHeader(raw, header, secret, STRIPE_TOLERANCE_SECONDS, undefined, now.getTime());
    } catch (error) {
      if (error instanceof Stripe.errors.StripeSignatureVerificationError) {
        throw new SignatureError('invalid signature');
      }
      throw error;
    }
    try {
      return JSON.parse(raw.toString('utf8'));
    } catch {
      throw new BodyNotJsonError();
    }
  },

  identify(body, raw): EventIdentity {
    const event = objectAt(body);
    const id = text(event.id);
    return { type: text(event.type) ?? '(none)', key: id === null ? bodyHashKey(raw) : eventKey(id) };
  },

  normalize(body, receivedAt) {
    if (!isObject(body)) throw new UnusableEventError('the event is not an object');
    const type = text(body.type);
    if (type === null) throw new UnusableEventError('type is missing');
    const object = objectAt(body.data).object;
    if (!isObject(object)) throw new UnusableEventError('data.object is missing');
    const occurredAt = isoTime(body.created, receivedAt);
    switch (type) {
      case 'payment_intent.succeeded':
      case 'invoice.paid': {
        const payment =
          type === 'invoice.paid' ? invoiceReport(object, false, occurredAt) : paymentIntentReport(object, false, occurredAt);
        return { kind: 'payment_succeeded', payment };
      }
      case 'payment_intent.payment_failed':
        return { kind: 'payment_failed', payment: paymentIntentReport(object, true, occurredAt) };
      case 'invoice.payment_failed':
        return { kind: 'payment_failed', payment: invoiceReport(object, true, occurredAt) };
      case 'charge.refunded':
        return chargeRefunded(object, occurredAt);
      case 'refund.created':
      case 'refund.updated':
        return refundEvent(object, occurredAt);
      default:
        return { kind: 'ignored', reason: `unhandled event type ${type}` };
    }
  },
};
