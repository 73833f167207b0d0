import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp } from '../../test/helpers/app.ts';
import { createPayment, createSubscription } from '../../test/helpers/factories.ts';
import {
  PROVIDER_ENV,
  paystackCharge,
  paystackRefund,
  postPaystack,
  postStripe,
  stripeEvent,
  stripePaymentIntent,
} from '../../test/helpers/provider-events.ts';

test('payments list: filters by customer, subscription, status and provider; sorts by created_at and amount', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const subscription = await createSubscription(app);
  const charges = [300, 100, 200].map((amount) => paystackCharge({ amount, email: `p${amount}@example.com` }));
  for (const charge of charges) {
    await postPaystack(app, charge);
    app.clock.advance(1000);
  }
  await postPaystack(app, paystackCharge({ amount: 5000, metadata: { subscription_id: subscription.id } }));
  app.clock.advance(1000);
  await postStripe(
    app,
    stripeEvent(
      'payment_intent.payment_failed',
      stripePaymentIntent({ amount: 50, error: 'declined', status: 'requires_payment_method' }),
    ),
  );

  const all = (await app.request('GET', '/api/payments')).body;
  assert.deepEqual(all.meta, { total: 5, page: 0, limit: 10 });
  assert.deepEqual(
    all.data.map((p: { amount: number }) => p.amount),
    [50, 5000, 200, 100, 300],
  );
  const byAmount = (await app.request('GET', '/api/payments?sort_by=amount&sort_order=asc&limit=2&page=1')).body;
  assert.deepEqual(
    byAmount.data.map((p: { amount: number }) => p.amount),
    [200, 300],
  );
  assert.deepEqual(byAmount.meta, { total: 5, page: 1, limit: 2 });

  const bySubscription = (await app.request('GET', `/api/payments?subscription_id=${subscription.id}`)).body;
  assert.equal(bySubscription.meta.total, 1);
  assert.equal(bySubscription.data[0].amount, 5000);
  const byCustomer = (await app.request('GET', `/api/payments?customer_id=${subscription.customer_id}`)).body;
  assert.equal(byCustomer.meta.total, 1);
  assert.equal((await app.request('GET', '/api/payments?status=failed')).body.data[0].amount, 50);
  assert.equal((await app.request('GET', '/api/payments?provider=stripe')).body.meta.total, 1);
  assert.equal((await app.request('GET', '/api/payments?provider=paystack&status=succeeded')).body.meta.total, 4);

  for (const [query, message] of [
    ['sort_by=status', 'sort_by must be one of: created_at, amount'],
    ['status=pending', 'status must be one of: succeeded, failed, refunded, partially_refunded'],
    ['provider=paypal', 'provider must be one of: paystack, stripe, manual'],
    ['sort_order=sideways', 'sort_order must be one of: asc, desc'],
  ]) {
    const res = await app.request('GET', `/api/payments?${query}`);
    assert.equal(res.status, 400, query);
    assert.equal(res.body.message, message);
  }
});

test('refunds list: filter payment_id, list rules, 404s for unknown and malformed ids', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const a = paystackCharge({ amount: 1000 });
  const b = paystackCharge({ amount: 1000 });
  await postPaystack(app, a);
  await postPaystack(app, b);
  await postPaystack(app, paystackRefund({ transactionReference: a.data.reference, amount: '100' }));
  app.clock.advance(1000);
  await postPaystack(app, paystackRefund({ transactionReference: a.data.reference, amount: '300' }));
  await postPaystack(app, paystackRefund({ transactionReference: b.data.reference, amount: '200' }));
  const paymentA = (await app.request('GET', '/api/payments?sort_order=asc')).body.data[0];
  const all = (await app.request('GET', '/api/refunds?limit=2')).body;
  assert.equal(all.meta.total, 3);
  assert.equal(all.data.length, 2);
  const forA = (await app.request('GET', `/api/refunds?payment_id=${paymentA.id}&sort_order=asc`)).body;
  assert.deepEqual(
    forA.data.map((r: { amount: number }) => r.amount),
    [100, 300],
  );
  assert.ok(forA.data.every((r: { payment_id: string }) => r.payment_id === paymentA.id));
  assert.equal((await app.request('GET', '/api/refunds?payment_id=pay_nothing')).body.meta.total, 0);

  for (const path of [
    '/api/payments/pay_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
    '/api/payments/nope',
    `/api/payments/${forA.data[0].id}`,
    '/api/refunds/re_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
    `/api/refunds/${paymentA.id}`,
  ]) {
    const res = await app.request('GET', path);
    assert.equal(res.status, 404, path);
    assert.equal(res.body.code, 'not_found');
  }
});

test('payments and refunds need an API key with read scope', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  for (const path of ['/api/payments', '/api/payments/pay_x', '/api/refunds', '/api/refunds/re_x']) {
    const res = await app.request('GET', path, { key: null });
    assert.equal(res.status, 401, path);
    assert.deepEqual(res.body, { code: 'authentication_error', message: 'unauthorized', details: null });
  }
});

test('the createPayment factory records succeeded and failed payments through notify', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const subscription = await createSubscription(app);
  const paid = await createPayment(app, { subscriptionId: subscription.id });
  assert.equal(paid.status, 'succeeded');
  assert.equal(paid.subscription_id, subscription.id);
  assert.equal((await app.request('GET', `/api/subscriptions/${subscription.id}`)).body.status, 'active');
  const failed = await createPayment(app, { subscriptionId: subscription.id, failed: true });
  assert.equal(failed.status, 'failed');
  assert.equal(failed.failure_reason, 'Declined');
  assert.equal((await app.request('GET', `/api/subscriptions/${subscription.id}`)).body.status, 'past_due');
});

test('an id filter holding a NUL character is a 400 on both databases, never a 500', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  for (const path of [
    '/api/payments?customer_id=%00',
    '/api/payments?subscription_id=sub_%00',
    '/api/refunds?payment_id=pay_%00x',
  ]) {
    const res = await app.request('GET', path);
    assert.equal(res.status, 400, path);
    assert.equal(res.body.code, 'validation_error', path);
  }
});
