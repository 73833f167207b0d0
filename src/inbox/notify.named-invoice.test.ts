// SPEC §9 "Which invoice": an event whose metadata names an invoice (`invoice_id`) and the
// customer, but no subscription, settles that invoice when the payment's customer and
// currency match it and it is payable — on both providers; otherwise the payment settles
// nothing, as before. Both databases (TEST_DATABASE_URL adds PostgreSQL).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import { createCustomer, createSubscription } from '../../test/helpers/factories.ts';
import { invoiceById, invoicesOf, paymentByReference } from '../../test/helpers/invoice-payments.ts';
import {
  nextSeq,
  PROVIDER_ENV,
  paystackCharge,
  postPaystack,
  postStripe,
  stripeEvent,
  stripePaymentIntent,
} from '../../test/helpers/provider-events.ts';

/** A new incomplete subscription (5000 NGN, or `currency`) and its open first invoice. */
async function openInvoice(app: TestApp, currency = 'NGN') {
  const sub = await createSubscription(app, { plan: { amount: 5000, currency } });
  const [invoice] = await invoicesOf(app, sub.id);
  assert.equal(invoice!.status, 'open');
  return { sub, invoice: invoice! };
}

async function subscriptionStatus(app: TestApp, id: string) {
  return (await app.request('GET', `/api/subscriptions/${id}`)).body.status;
}

/** Posts a Paystack charge.success of `amount` NGN (or `currency`) with `metadata`; returns its reference. */
async function paystackPaid(
  app: TestApp,
  metadata: Record<string, string>,
  options: { currency?: string; email?: string } = {},
) {
  const reference = `T${nextSeq()}`;
  const body = paystackCharge({
    reference,
    amount: 5000,
    currency: options.currency ?? 'NGN',
    metadata,
    email: options.email,
  });
  assert.equal((await postPaystack(app, body)).status, 200);
  return reference;
}

test('Paystack: metadata invoice_id + customer_id without subscription_id settles the named invoice and activates its subscription', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const { sub, invoice } = await openInvoice(app);
  const reference = await paystackPaid(app, { invoice_id: invoice.id, customer_id: sub.customer_id });
  const payment = await paymentByReference(app, reference);
  assert.deepEqual(
    { customer: payment.customer_id, subscription: payment.subscription_id, invoice: payment.invoice_id },
    { customer: sub.customer_id, subscription: sub.id, invoice: invoice.id },
  );
  const after = await invoiceById(app, invoice.id);
  assert.deepEqual({ status: after.status, amount_paid: after.amount_paid }, { status: 'paid', amount_paid: 5000 });
  assert.equal(await subscriptionStatus(app, sub.id), 'active');
});

test('Paystack: the named invoice is settled when the payer is its customer by email (no customer_id)', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const customer = await createCustomer(app);
  const sub = await createSubscription(app, { customerId: customer.id });
  const [invoice] = await invoicesOf(app, sub.id);
  const reference = await paystackPaid(app, { invoice_id: invoice!.id }, { email: customer.email });
  assert.equal((await paymentByReference(app, reference)).invoice_id, invoice!.id);
  assert.equal((await invoiceById(app, invoice!.id)).status, 'paid');
});

test('Stripe: metadata invoice_id + customer_id without subscription_id settles the named invoice', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const { sub, invoice } = await openInvoice(app, 'USD');
  const intent = stripePaymentIntent({
    amount: 5000,
    currency: 'usd',
    metadata: { invoice_id: invoice.id, customer_id: sub.customer_id },
  });
  assert.equal((await postStripe(app, stripeEvent('payment_intent.succeeded', intent))).status, 200);
  const payment = await paymentByReference(app, intent.id);
  assert.deepEqual(
    { subscription: payment.subscription_id, invoice: payment.invoice_id },
    { subscription: sub.id, invoice: invoice.id },
  );
  assert.equal((await invoiceById(app, invoice.id)).status, 'paid');
  assert.equal(await subscriptionStatus(app, sub.id), 'active');
});

test('a named invoice of another customer, in another currency, or already void is not settled: the payment is only recorded', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const stranger = await createCustomer(app);
  const theirs = await openInvoice(app);
  const usd = await openInvoice(app);
  const voided = await openInvoice(app);
  assert.equal((await app.request('POST', `/api/invoices/${voided.invoice.id}/void`)).status, 200);
  const attempts: [Record<string, string>, string | undefined][] = [
    [{ invoice_id: theirs.invoice.id, customer_id: stranger.id }, undefined],
    [{ invoice_id: usd.invoice.id, customer_id: usd.sub.customer_id }, 'USD'],
    [{ invoice_id: voided.invoice.id, customer_id: voided.sub.customer_id }, undefined],
  ];
  for (const [metadata, currency] of attempts) {
    const reference = await paystackPaid(app, metadata, { currency });
    const payment = await paymentByReference(app, reference);
    assert.deepEqual(
      { subscription: payment.subscription_id, invoice: payment.invoice_id },
      { subscription: null, invoice: null },
    );
  }
  assert.equal((await invoiceById(app, theirs.invoice.id)).status, 'open');
  assert.equal((await invoiceById(app, usd.invoice.id)).status, 'open');
  assert.equal((await invoiceById(app, voided.invoice.id)).status, 'void');
  assert.equal(await subscriptionStatus(app, theirs.sub.id), 'incomplete');
});
