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
  type ReusableMethodReport,
  SignatureError,
  UnusableEventError,
} from '../provider.ts';
import {
  bodyHashKey,
  currencyCode,
  displayLabel,
  eventKey,
  expiryMonth,
  expiryYear,
  flatMetadata,
  isObject,
  isoTime,
  type JsonObject,
  lastFour,
  minorUnits,
  readObject,
  redactStrings,
  readId,
  readRequiredId,
  readText,
  readVerbatim,
} from '../provider-values.ts';

/** A Stripe PaymentMethod id. */
const PAYMENT_METHOD_ID = /^pm_[A-Za-z0-9_]+$/;

/** Seconds a signature's timestamp may lie from the receive time, either way (SPEC §5). */
export const STRIPE_TOLERANCE_SECONDS = 300;

/** The id of an expandable field at `field`: the string itself, or the expanded object's `id`. */
function idOf(value: unknown, field: string): string | null {
  return isObject(value) ? readId(value.id, `${field}.id`) : readId(value, field);
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
  const error = readObject(intent.last_payment_error);
  // Stripe's id of the payer: not used here, but refused with a NUL like every identifier.
  idOf(intent.customer, 'data.object.customer');
  return {
    reference: readRequiredId(intent.id, 'data.object.id'),
    amount: minorUnits(failed ? intent.amount : (intent.amount_received ?? intent.amount), 'data.object.amount'),
    currency: currencyCode(intent.currency, 'data.object.currency'),
    email: readText(intent.receipt_email),
    name: null,
    metadata: flatMetadata(intent.metadata, 'data.object.metadata'),
    subscriptionReference: null,
    failureReason: failed ? (readText(error.message) ?? readText(error.code) ?? 'payment failed') : null,
    occurredAt,
    method: failed ? null : reusablePaymentMethod(intent),
  };
}

/**
 * The PaymentMethod of a succeeded PaymentIntent when it can be charged again: it names both
 * `payment_method` (`pm_…`, which charges it and identifies it) and `customer` (`cus_…`, which
 * it is attached to: off-session charges need both). The event carries no card details; API
 * versions before 2022-11-15 embed the charges (`charges.data[].payment_method_details`), whose
 * brand, last4 and expiry are used when present.
 */
function reusablePaymentMethod(intent: JsonObject): ReusableMethodReport | null {
  // A method that cannot be kept exactly as sent is not saved; the payment still is.
  const paymentMethod = readVerbatim(
    isObject(intent.payment_method) ? intent.payment_method.id : intent.payment_method,
  );
  const customer = readVerbatim(isObject(intent.customer) ? intent.customer.id : intent.customer);
  if (paymentMethod === null || customer === null || !customer.startsWith('cus_')) return null;
  const charges = readObject(intent.charges).data;
  const details = readObject(readObject(Array.isArray(charges) ? charges[0] : undefined).payment_method_details);
  const type = displayLabel(details.type) ?? displayLabel(readObject(intent.payment_method).type);
  const types = Array.isArray(intent.payment_method_types) ? intent.payment_method_types : [];
  const card = readObject(type === null ? details.card : details[type]);
  return {
    fingerprint: paymentMethod,
    credential: paymentMethod,
    providerCustomerId: customer,
    email: null,
    type: type ?? (types.length === 1 ? displayLabel(types[0]) : null) ?? 'card',
    brand: displayLabel(card.brand),
    last4: lastFour(card.last4),
    expMonth: expiryMonth(card.exp_month),
    expYear: expiryYear(card.exp_year),
  };
}

/**
 * The PaymentIntent an invoice was paid with: `invoice.payment_intent` before API version
 * 2025-03-31, else the first of `invoice.payments` (when the payload includes them).
 */
function invoicePaymentIntent(invoice: JsonObject): string | null {
  const direct = idOf(invoice.payment_intent, 'data.object.payment_intent');
  if (direct !== null) return direct;
  const payments = readObject(invoice.payments).data;
  if (!Array.isArray(payments)) return null;
  for (const entry of payments) {
    const intent = idOf(
      readObject(readObject(entry).payment).payment_intent,
      'data.object.payments.data.payment.payment_intent',
    );
    if (intent !== null) return intent;
  }
  return null;
}

/**
 * `invoice.paid` / `invoice.payment_failed`. The subscription is `invoice.subscription`
 * before API version 2025-03-31 and `invoice.parent.subscription_details.subscription`
 * since (its metadata moved the same way). The payment is the invoice's PaymentIntent
 * when the payload names it (so `payment_intent.succeeded` converges with it), else the
 * invoice itself, until `invoice_payment.paid` links the two (invoicePaymentLink).
 */
function invoiceReport(invoice: JsonObject, failed: boolean, occurredAt: string): PaymentReport {
  const details = readObject(readObject(invoice.parent).subscription_details);
  const legacyDetails = readObject(invoice.subscription_details);
  idOf(invoice.customer, 'data.object.customer');
  return {
    reference: invoicePaymentIntent(invoice) ?? readRequiredId(invoice.id, 'data.object.id'),
    amount: minorUnits(
      failed ? invoice.amount_due : invoice.amount_paid,
      failed ? 'data.object.amount_due' : 'data.object.amount_paid',
    ),
    currency: currencyCode(invoice.currency, 'data.object.currency'),
    email: readText(invoice.customer_email),
    name: readText(invoice.customer_name),
    metadata: {
      ...flatMetadata(legacyDetails.metadata, 'data.object.subscription_details.metadata'),
      ...flatMetadata(details.metadata, 'data.object.parent.subscription_details.metadata'),
      ...flatMetadata(invoice.metadata, 'data.object.metadata'),
    },
    subscriptionReference:
      idOf(invoice.subscription, 'data.object.subscription') ??
      idOf(details.subscription, 'data.object.parent.subscription_details.subscription'),
    failureReason: failed
      ? (readText(readObject(invoice.last_finalization_error).message) ?? 'invoice payment failed')
      : null,
    occurredAt,
  };
}

/**
 * `invoice_payment.paid` (API version 2025-05-28 and later): an InvoicePayment `{invoice,
 * payment: {type, payment_intent}, status}` tells which PaymentIntent paid the invoice —
 * the only link between the two since 2025-03-31, when `invoice.payment_intent` and
 * `payment_intent.invoice` were removed. Payments of other types (`charge`,
 * `payment_record`) name no PaymentIntent that another event could report: ignored.
 */
function invoicePaymentLink(invoicePayment: JsonObject): ProviderEvent {
  const status = readId(invoicePayment.status, 'data.object.status');
  if (status !== 'paid') return { kind: 'ignored', reason: `invoice payment status ${status ?? 'missing'}` };
  const payment = readObject(invoicePayment.payment);
  const type = readId(payment.type, 'data.object.payment.type');
  if (type !== 'payment_intent') return { kind: 'ignored', reason: `invoice payment type ${type ?? 'missing'}` };
  const invoice = idOf(invoicePayment.invoice, 'data.object.invoice');
  if (invoice === null) throw new UnusableEventError('data.object.invoice is missing');
  const intent = idOf(payment.payment_intent, 'data.object.payment.payment_intent');
  if (intent === null) throw new UnusableEventError('data.object.payment.payment_intent is missing');
  return { kind: 'payment_linked', reference: invoice, canonicalReference: intent };
}

/**
 * Where a Refund's `status` leaves it: `succeeded`; `failed` for `failed` and `canceled` (a
 * refund can fail or be cancelled after succeeding); null while it is `pending` or
 * `requires_action` (not money yet).
 */
function refundOutcome(status: string | null): RefundReport['status'] | null {
  if (status === 'succeeded') return 'succeeded';
  if (status === 'failed' || status === 'canceled') return 'failed';
  return null;
}

function refundReport(
  refund: JsonObject,
  status: RefundReport['status'],
  fallbackCurrency: unknown,
  occurredAt: string,
): RefundReport {
  const amount = minorUnits(refund.amount, 'refund amount');
  if (amount === 0) throw new UnusableEventError('refund amount must be above 0');
  // Set by POST /api/payments/{id}/refund (SPEC §10): settles that pending refund.
  const requestReference = readId(readObject(refund.metadata).refund_id, 'refund metadata.refund_id');
  return {
    reference: readRequiredId(refund.id, 'refund id'),
    amount,
    currency: currencyCode(refund.currency ?? fallbackCurrency, 'refund currency'),
    status,
    occurredAt: isoTime(refund.created, new Date(occurredAt)),
    ...(requestReference === null ? {} : { requestReference }),
  };
}

/**
 * `charge.refunded`: the refunds it lists, which only API versions before 2022-11-15 include.
 * Its running `amount_refunded` is not used: a bare total cannot be told apart into refunds,
 * so it could neither be capped per refund nor reversed when one fails (refund.* events
 * report each refund).
 */
function chargeRefunded(charge: JsonObject, occurredAt: string): ProviderEvent {
  const listed = readObject(charge.refunds).data;
  const refunds: RefundReport[] = [];
  for (const refund of (Array.isArray(listed) ? listed : []).map(readObject)) {
    const status = refundOutcome(readId(refund.status, 'data.object.refunds.data.status'));
    if (status !== null) refunds.push(refundReport(refund, status, charge.currency, occurredAt));
  }
  if (refunds.length === 0) {
    return { kind: 'ignored', reason: 'charge.refunded lists no settled refund (refund.* events report them)' };
  }
  return {
    kind: 'refunds',
    paymentReference:
      idOf(charge.payment_intent, 'data.object.payment_intent') ?? readRequiredId(charge.id, 'data.object.id'),
    refunds,
  };
}

/**
 * `refund.created` / `refund.updated` / `refund.failed`: counts once the refund has
 * `status: succeeded`; `failed`/`canceled` (and any `refund.failed`) reverse it.
 */
function refundEvent(type: string, refund: JsonObject, occurredAt: string): ProviderEvent {
  const reported = readId(refund.status, 'data.object.status');
  const status = type === 'refund.failed' ? 'failed' : refundOutcome(reported);
  if (status === null) return { kind: 'ignored', reason: `refund status ${reported ?? 'missing'}` };
  const paymentReference =
    idOf(refund.payment_intent, 'data.object.payment_intent') ?? idOf(refund.charge, 'data.object.charge');
  if (paymentReference === null)
    throw new UnusableEventError('data.object.payment_intent and data.object.charge are missing');
  return { kind: 'refunds', paymentReference, refunds: [refundReport(refund, status, refund.currency, occurredAt)] };
}

/**
 * `setup_intent.succeeded` (https://docs.stripe.com/api/setup_intents/object): a method saved
 * without a payment, by a Checkout Session in `setup` mode (SPEC §10 "Adding a method"). Its
 * `payment_method` (`pm_…`) attached to `customer` (`cus_…`) can be charged off-session; one
 * without our `customer_id` in its metadata, or without both ids, is not ours to save.
 */
function setupIntentSucceeded(intent: JsonObject): ProviderEvent {
  const metadata = flatMetadata(intent.metadata, 'data.object.metadata');
  const method = reusablePaymentMethod({ ...intent, charges: undefined });
  if (metadata.customer_id === undefined) return { kind: 'ignored', reason: 'setup intent names no customer of ours' };
  if (method === null) return { kind: 'ignored', reason: 'setup intent has no reusable payment method' };
  return { kind: 'method_saved', metadata, method };
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
    const event = readObject(body);
    const id = readId(event.id, 'id');
    return { type: readId(event.type, 'type') ?? '(none)', key: id === null ? bodyHashKey(raw) : eventKey(id) };
  },

  // A PaymentMethod id (`pm_…`) is what charges a saved method: wherever the event names one.
  redact: (body) => redactStrings(body, (_key, text) => PAYMENT_METHOD_ID.test(text)),

  normalize(body, receivedAt) {
    if (!isObject(body)) throw new UnusableEventError('the event is not an object');
    const type = readId(body.type, 'type');
    if (type === null) throw new UnusableEventError('type is missing');
    const object = readObject(body.data).object;
    if (!isObject(object)) throw new UnusableEventError('data.object is missing');
    const occurredAt = isoTime(body.created, receivedAt);
    switch (type) {
      case 'payment_intent.succeeded':
      case 'invoice.paid': {
        const payment =
          type === 'invoice.paid'
            ? invoiceReport(object, false, occurredAt)
            : paymentIntentReport(object, false, occurredAt);
        return { kind: 'payment_succeeded', payment };
      }
      case 'payment_intent.payment_failed':
        return { kind: 'payment_failed', payment: paymentIntentReport(object, true, occurredAt) };
      case 'invoice.payment_failed':
        return { kind: 'payment_failed', payment: invoiceReport(object, true, occurredAt) };
      case 'invoice_payment.paid':
        return invoicePaymentLink(object);
      case 'setup_intent.succeeded':
        return setupIntentSucceeded(object);
      case 'charge.refunded':
        return chargeRefunded(object, occurredAt);
      case 'refund.created':
      case 'refund.updated':
      case 'refund.failed':
        return refundEvent(type, object, occurredAt);
      default:
        return { kind: 'ignored', reason: `unhandled event type ${type}` };
    }
  },
};
