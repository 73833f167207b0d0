// The adapters alone (no database): verification, inbox keys and our reading of each
// provider's documented payloads, including the traps SPEC §5 names.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  PAYSTACK_SECRET,
  paystackCharge,
  paystackInvoiceFailed,
  paystackRefund,
  signPaystack,
  signStripe,
  STRIPE_SECRET,
  stripeEvent,
  stripeInvoice,
  stripeInvoicePayment,
  stripePaymentIntent,
  stripeRefund,
  stripeRefundedCharge,
} from '../../test/helpers/provider-events.ts';
import { SignatureError, UnusableEventError } from './provider.ts';
import { PROVIDER_NAMES } from '../shared/provider-names.ts';
import { findProvider, PROVIDERS } from './registry.ts';
import { paystack } from './paystack/events.ts';
import { stripe } from './stripe/events.ts';

const RECEIVED = new Date('2026-01-15T10:00:00.000Z');
const raw = (value: unknown) => Buffer.from(JSON.stringify(value));

test('the registry maps each p value to its adapter; unknown names (and prototype keys) find nothing', () => {
  assert.deepEqual(PROVIDER_NAMES, ['paystack', 'stripe']);
  assert.deepEqual(Object.keys(PROVIDERS), PROVIDER_NAMES);
  for (const [name, adapter] of Object.entries(PROVIDERS)) assert.equal(adapter.name, name);
  assert.equal(findProvider('paystack'), paystack);
  for (const name of ['razorpay', 'toString', '__proto__', 'constructor', ''])
    assert.equal(findProvider(name), undefined);
});

test('paystack verify: the hex HMAC-SHA512 of the exact bytes, any case', () => {
  const body = raw(paystackCharge());
  const signature = signPaystack(body);
  assert.deepEqual(
    paystack.verify(body, { 'x-paystack-signature': signature }, PAYSTACK_SECRET, RECEIVED),
    JSON.parse(body.toString()),
  );
  assert.ok(paystack.verify(body, { 'x-paystack-signature': signature.toUpperCase() }, PAYSTACK_SECRET, RECEIVED));
  assert.throws(
    () => paystack.verify(body, { 'x-paystack-signature': [signature, signature] }, PAYSTACK_SECRET, RECEIVED),
    SignatureError,
  );
  assert.throws(() => paystack.verify(body, { 'x-paystack-signature': signature }, 'other', RECEIVED), SignatureError);
});

test('stripe verify: tolerance is measured from the injected receive time, both ways', () => {
  const body = JSON.stringify(stripeEvent('payment_intent.succeeded', stripePaymentIntent()));
  const t = Math.floor(RECEIVED.getTime() / 1000);
  const header = signStripe(body, t);
  // The real clock is far from 2026-01-15; the receive time given is what counts.
  assert.ok(stripe.verify(Buffer.from(body), { 'stripe-signature': header }, STRIPE_SECRET, RECEIVED));
  assert.ok(
    stripe.verify(
      Buffer.from(body),
      { 'stripe-signature': header },
      STRIPE_SECRET,
      new Date(RECEIVED.getTime() + 300_000),
    ),
  );
  for (const offset of [-301_000, 301_000]) {
    assert.throws(
      () =>
        stripe.verify(
          Buffer.from(body),
          { 'stripe-signature': header },
          STRIPE_SECRET,
          new Date(RECEIVED.getTime() + offset),
        ),
      /tolerance/,
    );
  }
  assert.throws(
    () =>
      stripe.verify(
        Buffer.from(body),
        { 'stripe-signature': signStripe(body, t, STRIPE_SECRET, 'v0') },
        STRIPE_SECRET,
        RECEIVED,
      ),
    SignatureError,
  );
});

test('paystack keys: type + data.id, else reference, else transaction_reference (+ refund reference), else invoice code', () => {
  const charge = paystackCharge({ id: 123, reference: 'T1' });
  assert.deepEqual(paystack.identify(charge, raw(charge)), { type: 'charge.success', key: 'charge.success:123' });
  const noId = { event: 'paymentrequest.success', data: { reference: 'PRQ_1' } };
  assert.equal(paystack.identify(noId, raw(noId)).key, 'paymentrequest.success:PRQ_1');
  const refund = paystackRefund({ transactionReference: 'T1', refundReference: null });
  assert.equal(paystack.identify(refund, raw(refund)).key, 'refund.processed:T1');
  const second = paystackRefund({ transactionReference: 'T1', refundReference: '9981' });
  assert.equal(paystack.identify(second, raw(second)).key, 'refund.processed:T1:9981');
  const invoice = paystackInvoiceFailed({ subscriptionCode: 'SUB_1', invoiceCode: 'INV_1' });
  assert.equal(paystack.identify(invoice, raw(invoice)).key, 'invoice.payment_failed:INV_1');
  const bare = { event: 'subscription.disable', data: { status: 'complete' } };
  assert.match(paystack.identify(bare, raw(bare)).key, /^sha256:[0-9a-f]{64}$/);
  assert.deepEqual(paystack.identify('"just a string"', Buffer.from('"just a string"')).type, '(none)');
});

test('paystack charge.success: metadata object, "", 0 or JSON string; amount in kobo; customer name', () => {
  const read = (metadata: unknown) => {
    const event = paystack.normalize(paystackCharge({ metadata, amount: 1500 }), RECEIVED);
    assert.equal(event.kind, 'payment_succeeded');
    return event.kind === 'payment_succeeded' ? event.payment : assert.fail();
  };
  assert.deepEqual(read('').metadata, {});
  assert.deepEqual(read(0).metadata, {});
  assert.deepEqual(read(null).metadata, {});
  assert.deepEqual(read({ customer_id: 'cus_1', nested: { a: 1 }, n: 7 }).metadata, { customer_id: 'cus_1', n: '7' });
  assert.deepEqual(read('{"subscription_id":"sub_1"}').metadata, { subscription_id: 'sub_1' });
  assert.deepEqual(read('{not json').metadata, {});
  const payment = read('');
  assert.equal(payment.amount, 1500);
  assert.equal(payment.currency, 'NGN');
  assert.equal(payment.name, 'Ada Obi');
  assert.equal(payment.occurredAt, '2026-01-15T09:59:58.000Z');
});

test('paystack refund.processed: string amounts, linked by transaction_reference', () => {
  const event = paystack.normalize(
    paystackRefund({ transactionReference: 'T77', amount: '2500', refundReference: null }),
    RECEIVED,
  );
  assert.deepEqual(event, {
    kind: 'refunds',
    paymentReference: 'T77',
    refunds: [
      {
        reference: 'T77:refund:2500',
        amount: 2500,
        currency: 'NGN',
        status: 'succeeded',
        occurredAt: RECEIVED.toISOString(),
        // Paystack's events do not name the refund POST /refund returned (SPEC §10).
        matchByAmount: true,
      },
    ],
  });
  for (const amount of ['-5', '2.5', 'abc', 0, '0', -1, {}, true]) {
    assert.throws(
      () => paystack.normalize(paystackRefund({ transactionReference: 'T77', amount }), RECEIVED),
      UnusableEventError,
      String(amount),
    );
  }
});

test('paystack refund.failed names the refund as refund.processed does, so it reverses it', () => {
  for (const refundReference of ['RF_1', null]) {
    const options = { transactionReference: 'T78', amount: '700', refundReference };
    const processed = paystack.normalize(paystackRefund(options), RECEIVED);
    const failed = paystack.normalize(paystackRefund({ ...options, failed: true }), RECEIVED);
    assert.ok(processed.kind === 'refunds' && failed.kind === 'refunds');
    assert.equal(failed.refunds[0]!.reference, processed.refunds[0]!.reference);
    assert.deepEqual([processed.refunds[0]!.status, failed.refunds[0]!.status], ['succeeded', 'failed']);
    assert.equal(failed.paymentReference, 'T78');
  }
});

test('stripe invoices: the subscription before and since API version 2025-03-31', () => {
  const legacy = stripeInvoice({
    style: 'legacy',
    subscription: 'sub_L',
    paymentIntent: 'pi_L',
    subscriptionMetadata: { subscription_id: 'sub_ours' },
  });
  const basil = stripeInvoice({
    style: 'basil',
    subscription: 'sub_B',
    paymentIntent: 'pi_B',
    subscriptionMetadata: { subscription_id: 'sub_ours' },
  });
  const basilNoPayments = stripeInvoice({ style: 'basil', subscription: 'sub_C' });
  const read = (invoice: object) => {
    const event = stripe.normalize(stripeEvent('invoice.paid', invoice as Record<string, unknown>), RECEIVED);
    return event.kind === 'payment_succeeded' ? event.payment : assert.fail(event.kind);
  };
  assert.deepEqual([read(legacy).subscriptionReference, read(legacy).reference], ['sub_L', 'pi_L']);
  assert.deepEqual([read(basil).subscriptionReference, read(basil).reference], ['sub_B', 'pi_B']);
  assert.deepEqual(read(basil).metadata, { subscription_id: 'sub_ours' });
  assert.deepEqual(read(legacy).metadata, { subscription_id: 'sub_ours' });
  assert.equal(read(basilNoPayments).reference, basilNoPayments.id);
  assert.equal(read(basil).currency, 'USD');
  // An expanded subscription object reads as its id.
  assert.equal(
    read({ ...legacy, subscription: { id: 'sub_X', object: 'subscription' } }).subscriptionReference,
    'sub_X',
  );
});

test('stripe refund.updated: the refund_id our API put in its metadata names the pending refund it settles', () => {
  const refund = {
    ...stripeRefund({ paymentIntent: 'pi_9', amount: 800, id: 're_3Fake1' }),
    metadata: { refund_id: 're_01OURS' },
  };
  const event = stripe.normalize(stripeEvent('refund.updated', refund), RECEIVED);
  assert.ok(event.kind === 'refunds');
  assert.equal(event.refunds[0]!.reference, 're_3Fake1');
  assert.equal(event.refunds[0]!.requestReference, 're_01OURS');
  const plain = stripe.normalize(
    stripeEvent('refund.updated', stripeRefund({ paymentIntent: 'pi_9', amount: 5 })),
    RECEIVED,
  );
  assert.ok(plain.kind === 'refunds');
  assert.equal(plain.refunds[0]!.requestReference, undefined, 'no metadata: nothing of ours to match');
});

test('stripe refunds: charge.refunded only through the refunds it lists; refund.* by status', () => {
  const listed = stripe.normalize(
    stripeEvent(
      'charge.refunded',
      stripeRefundedCharge({
        paymentIntent: 'pi_1',
        amount: 1000,
        amountRefunded: 600,
        refunds: [
          stripeRefund({ paymentIntent: 'pi_1', amount: 600, id: 're_1' }),
          stripeRefund({ paymentIntent: 'pi_1', amount: 50, id: 're_2', status: 'failed' }),
          stripeRefund({ paymentIntent: 'pi_1', amount: 70, id: 're_3', status: 'pending' }),
        ],
      }),
    ),
    RECEIVED,
  );
  assert.ok(listed.kind === 'refunds');
  assert.deepEqual(
    listed.refunds.map((r) => [r.reference, r.status]),
    [
      ['re_1', 'succeeded'],
      ['re_2', 'failed'],
    ],
  );
  assert.equal(listed.paymentReference, 'pi_1');
  // Since API 2022-11-15 the list is left out: a bare running total is not itemised money.
  const unlisted = stripe.normalize(
    stripeEvent('charge.refunded', stripeRefundedCharge({ paymentIntent: 'pi_1', amount: 1000, amountRefunded: 1000 })),
    RECEIVED,
  );
  assert.equal(unlisted.kind, 'ignored');
  assert.match(unlisted.kind === 'ignored' ? unlisted.reason : '', /lists no settled refund/);
  const pending = stripe.normalize(
    stripeEvent('refund.created', stripeRefund({ paymentIntent: 'pi_1', amount: 5, status: 'pending' })),
    RECEIVED,
  );
  assert.deepEqual(pending, { kind: 'ignored', reason: 'refund status pending' });
  const statusOf = (type: string, status: string) => {
    const event = stripe.normalize(
      stripeEvent(type, stripeRefund({ paymentIntent: 'pi_1', amount: 5, status })),
      RECEIVED,
    );
    return event.kind === 'refunds' ? event.refunds[0]!.status : event.kind;
  };
  assert.deepEqual(
    [
      statusOf('refund.updated', 'succeeded'),
      statusOf('refund.updated', 'canceled'),
      statusOf('refund.updated', 'failed'),
      statusOf('refund.failed', 'failed'),
      statusOf('refund.updated', 'requires_action'),
    ],
    ['succeeded', 'failed', 'failed', 'failed', 'ignored'],
  );
});

test('stripe invoice_payment.paid links the invoice to its PaymentIntent; other payment types and statuses are ignored', () => {
  const link = (object: unknown) =>
    stripe.normalize(
      stripeEvent('invoice_payment.paid', object as Record<string, unknown>, { apiVersion: '2025-05-28.basil' }),
      RECEIVED,
    );
  const paid = stripeInvoicePayment({ invoice: 'in_1', paymentIntent: 'pi_1' });
  assert.deepEqual(link(paid), { kind: 'payment_linked', reference: 'in_1', canonicalReference: 'pi_1' });
  // Expanded objects read as their ids.
  const expanded = {
    ...paid,
    invoice: { id: 'in_1', object: 'invoice' },
    payment: { type: 'payment_intent', payment_intent: { id: 'pi_1', object: 'payment_intent' } },
  };
  assert.deepEqual(link(expanded), { kind: 'payment_linked', reference: 'in_1', canonicalReference: 'pi_1' });
  assert.deepEqual(link(stripeInvoicePayment({ invoice: 'in_1', paymentIntent: 'pi_1', type: 'charge' })), {
    kind: 'ignored',
    reason: 'invoice payment type charge',
  });
  assert.deepEqual(link(stripeInvoicePayment({ invoice: 'in_1', paymentIntent: 'pi_1', status: 'open' })), {
    kind: 'ignored',
    reason: 'invoice payment status open',
  });
  assert.throws(() => link({ ...paid, invoice: null }), UnusableEventError);
  assert.throws(() => link({ ...paid, payment: { type: 'payment_intent' } }), UnusableEventError);
});

test('stripe keys are the event id; events without one are keyed by their bytes', () => {
  const event = stripeEvent('payment_intent.succeeded', stripePaymentIntent(), { id: 'evt_123' });
  assert.deepEqual(stripe.identify(event, raw(event)), { type: 'payment_intent.succeeded', key: 'evt_123' });
  const anonymous = { type: 'invoice.paid', data: { object: {} } };
  assert.match(stripe.identify(anonymous, raw(anonymous)).key, /^sha256:/);
});
