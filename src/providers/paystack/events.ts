// Paystack webhooks (https://paystack.com/docs/payments/webhooks/): `X-Paystack-Signature`
// is the hex HMAC-SHA512 of the raw body keyed with the secret key. Payloads are
// `{event, data}`; there is no event id, so the inbox key is the type plus the object's id.
import { createHmac, timingSafeEqual } from 'node:crypto';
import {
  BodyNotJsonError,
  type EventIdentity,
  type PaymentReport,
  type ProviderAdapter,
  type ProviderEvent,
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
  optionalCurrency,
  readId,
  readRequiredId,
  readText,
  readVerbatim,
} from '../provider-values.ts';

const SIGNATURE = /^[0-9a-f]{128}$/i;

function parseJson(raw: Buffer): unknown {
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    throw new BodyNotJsonError();
  }
}

function dataOf(body: unknown): JsonObject {
  return readObject(isObject(body) ? body.data : undefined);
}

function typeOf(body: unknown): string | null {
  return isObject(body) ? readId(body.event, 'event') : null;
}

function customerName(customer: JsonObject): string | null {
  const name = [readText(customer.first_name), readText(customer.last_name)].filter(Boolean).join(' ');
  return name === '' ? null : name;
}

/**
 * The payer: `data.customer`. Its `customer_code` is Paystack's id of the payer: not used,
 * but refused with a NUL like every identifier (SPEC §5); email and names are display text.
 */
function payerOf(data: JsonObject): JsonObject {
  const customer = readObject(data.customer);
  readId(customer.customer_code, 'data.customer.customer_code');
  return customer;
}

/** `charge.success`: a successful transaction; `data.reference` is the payment's id. */
function chargeSuccess(data: JsonObject, now: Date): ProviderEvent {
  const customer = payerOf(data);
  const payment: PaymentReport = {
    reference: readRequiredId(data.reference, 'data.reference'),
    amount: minorUnits(data.amount, 'data.amount'),
    currency: currencyCode(data.currency, 'data.currency'),
    email: readText(customer.email),
    name: customerName(customer),
    metadata: flatMetadata(data.metadata, 'data.metadata'),
    subscriptionReference:
      readId(readObject(data.subscription).subscription_code, 'data.subscription.subscription_code') ??
      readId(data.subscription_code, 'data.subscription_code'),
    failureReason: null,
    occurredAt: isoTime(data.paid_at ?? data.paidAt ?? data.created_at, now),
    method: reusableAuthorization(data, customer),
  };
  return { kind: 'payment_succeeded', payment };
}

/** Longest authorization code or signature kept (Paystack's are ~20 characters). */
const MAX_CREDENTIAL_LENGTH = 255;

/**
 * `data.authorization` when Paystack says it can be charged again (`reusable: true`, and an
 * `authorization_code`): the code charges it (POST /transaction/charge_authorization), the
 * `signature` identifies the card across authorizations (the code stands in when absent).
 * `exp_month`/`exp_year` come as strings; `brand` may be missing where `card_type` is not.
 */
function reusableAuthorization(data: JsonObject, customer: JsonObject): ReusableMethodReport | null {
  const authorization = readObject(data.authorization);
  if (authorization.reusable !== true) return null;
  // A credential that cannot be kept exactly as sent is not saved; the payment still is.
  const code = readVerbatim(authorization.authorization_code);
  if (code === null || code.length > MAX_CREDENTIAL_LENGTH) return null;
  const signature = readVerbatim(authorization.signature);
  return {
    fingerprint: signature !== null && signature.length <= MAX_CREDENTIAL_LENGTH ? signature : code,
    credential: code,
    providerCustomerId: null,
    email: readText(customer.email),
    type: displayLabel(authorization.channel) ?? displayLabel(data.channel) ?? 'card',
    brand: displayLabel(authorization.brand) ?? displayLabel(authorization.card_type),
    last4: lastFour(authorization.last4),
    expMonth: expiryMonth(authorization.exp_month),
    expYear: expiryYear(authorization.exp_year),
  };
}

/**
 * `invoice.payment_failed`: a subscription charge failed. The documented payload carries
 * `data.subscription.subscription_code` and `data.transaction` (often `{}`), no currency
 * at the top level; the failed attempt is identified by its transaction reference, else
 * by the invoice code.
 */
function invoicePaymentFailed(data: JsonObject, now: Date): ProviderEvent {
  const customer = payerOf(data);
  const transaction = readObject(data.transaction);
  const subscription = readObject(data.subscription);
  const reference =
    readId(transaction.reference, 'data.transaction.reference') ?? readId(data.invoice_code, 'data.invoice_code');
  if (reference === null) throw new UnusableEventError('data.transaction.reference or data.invoice_code is missing');
  return {
    kind: 'payment_failed',
    payment: {
      reference,
      amount: minorUnits(data.amount ?? transaction.amount, 'data.amount'),
      currency:
        optionalCurrency(transaction.currency, 'data.transaction.currency') ??
        optionalCurrency(data.currency, 'data.currency') ??
        optionalCurrency(readObject(subscription.plan).currency, 'data.subscription.plan.currency'),
      email: readText(customer.email),
      name: customerName(customer),
      metadata: {
        ...flatMetadata(subscription.metadata, 'data.subscription.metadata'),
        ...flatMetadata(data.metadata, 'data.metadata'),
      },
      subscriptionReference: readId(subscription.subscription_code, 'data.subscription.subscription_code'),
      failureReason:
        readText(transaction.gateway_response) ?? readText(data.description) ?? 'subscription charge failed',
      occurredAt: isoTime(data.created_at ?? data.createdAt, now),
    },
  };
}

/**
 * `refund.processed` (the money went back) and `refund.failed` (it did not, possibly after a
 * `refund.processed`): no `id`/`reference` of their own; linked to the charge by
 * `data.transaction_reference`; `amount` may be a string. Both name the refund the same way
 * (`refund_reference`, else `id`, else charge + amount), so a failure reverses its success.
 */
function refundReport(data: JsonObject, status: 'succeeded' | 'failed', now: Date): ProviderEvent {
  const paymentReference = readRequiredId(data.transaction_reference, 'data.transaction_reference');
  const amount = minorUnits(data.amount, 'data.amount');
  if (amount === 0) throw new UnusableEventError('data.amount must be above 0 for a refund');
  return {
    kind: 'refunds',
    paymentReference,
    refunds: [
      {
        reference: refundReference(data) ?? `${paymentReference}:refund:${amount}`,
        amount,
        currency: currencyCode(data.currency, 'data.currency'),
        status,
        occurredAt: isoTime(data.refunded_at ?? data.updated_at ?? data.created_at, now),
        // Paystack's refund events name neither the refund POST /refund returned nor
        // anything of ours: a pending API refund of this charge is matched by its amount.
        matchByAmount: true,
      },
    ],
  };
}

function refundReference(data: JsonObject): string | null {
  return readId(data.refund_reference, 'data.refund_reference') ?? readId(data.id, 'data.id');
}

export const paystack: ProviderAdapter = {
  name: 'paystack',
  signatureHeader: 'x-paystack-signature',

  secret: (config) => config.paystackSecretKey,

  verify(raw, headers, secret) {
    const given = headers['x-paystack-signature'];
    if (typeof given !== 'string' || given.trim() === '') throw new SignatureError('missing signature');
    const expected = createHmac('sha512', secret).update(raw).digest();
    const candidate = given.trim();
    // Same length and hex before comparing; the comparison itself is constant-time.
    if (!SIGNATURE.test(candidate) || !timingSafeEqual(expected, Buffer.from(candidate, 'hex'))) {
      throw new SignatureError('invalid signature');
    }
    return parseJson(raw);
  },

  identify(body, raw): EventIdentity {
    const type = typeOf(body) ?? '(none)';
    const data = dataOf(body);
    // SPEC §5: type + data.id, else data.reference, else data.transaction_reference. Two
    // partial refunds of one charge share a transaction_reference, so a refund's own
    // reference joins the key when Paystack sends one.
    const id = readId(data.id, 'data.id') ?? readId(data.reference, 'data.reference');
    if (id !== null) return { type, key: eventKey(type, id) };
    const transaction = readId(data.transaction_reference, 'data.transaction_reference');
    if (transaction !== null) {
      const refund = readId(data.refund_reference, 'data.refund_reference');
      return { type, key: refund === null ? eventKey(type, transaction) : eventKey(type, transaction, refund) };
    }
    // invoice.* events carry neither: the invoice code and the attempt's transaction.
    const invoice = readId(data.invoice_code, 'data.invoice_code');
    if (invoice !== null) {
      const attempt = readId(readObject(data.transaction).reference, 'data.transaction.reference');
      return { type, key: attempt === null ? eventKey(type, invoice) : eventKey(type, invoice, attempt) };
    }
    return { type, key: bodyHashKey(raw) };
  },

  // An authorization_code charges the card it names (charge.success, invoice.*, subscription.*).
  redact: (body) => redactStrings(body, (key) => key === 'authorization_code'),

  normalize(body, receivedAt) {
    const type = typeOf(body);
    if (type === null) throw new UnusableEventError('event is missing');
    if (!isObject(isObject(body) ? body.data : undefined)) throw new UnusableEventError('data is missing');
    const data = dataOf(body);
    switch (type) {
      case 'charge.success':
        return chargeSuccess(data, receivedAt);
      case 'invoice.payment_failed':
        return invoicePaymentFailed(data, receivedAt);
      case 'refund.processed':
        return refundReport(data, 'succeeded', receivedAt);
      case 'refund.failed':
        return refundReport(data, 'failed', receivedAt);
      default:
        return { kind: 'ignored', reason: `unhandled event type ${type}` };
    }
  },
};
