import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import { createSubscription } from '../../test/helpers/factories.ts';
import {
  nextSeq,
  PROVIDER_ENV,
  postStripe,
  stripeEvent,
  stripeInvoice,
  stripePaymentIntent,
  stripeRefund,
  stripeRefundedCharge,
} from '../../test/helpers/provider-events.ts';

async function payments(app: TestApp) {
  return (await app.request('GET', '/api/payments?limit=100')).body;
}

async function onlyPayment(app: TestApp) {
  const list = await payments(app);
  assert.equal(list.meta.total, 1, JSON.stringify(list.data));
  return list.data[0];
}

async function topics(app: TestApp, topic: string) {
  return (await app.request('GET', `/api/events?topic=${topic}&limit=100`)).body.data as { data: any }[];
}

async function subscriptionOf(app: TestApp, id: string) {
  return (await app.request('GET', `/api/subscriptions/${id}`)).body;
}

async function inboxStatuses(app: TestApp) {
  const rows = await app.deps.db
    .selectFrom('provider_events')
    .select('status')
    .orderBy('received_at')
    .orderBy('id')
    .execute();
  return rows.map((r) => r.status);
}

test('payment_intent.succeeded records the payment in upper-case currency, paid at the event time', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const intent = stripePaymentIntent({ amount: 2599, email: 'buyer@example.com' });
  const event = stripeEvent('payment_intent.succeeded', intent);
  assert.deepEqual((await postStripe(app, event)).body, { received: true });
  const payment = await onlyPayment(app);
  assert.equal(payment.provider, 'stripe');
  assert.equal(payment.provider_reference, intent.id);
  assert.equal(payment.amount, 2599);
  assert.equal(payment.currency, 'USD');
  assert.equal(payment.status, 'succeeded');
  assert.equal(payment.paid_at, '2026-01-15T10:00:00.000Z');
  const customer = (await app.request('GET', `/api/customers/${payment.customer_id}`)).body;
  assert.equal(customer.email, 'buyer@example.com');
  const row = await app.deps.db.selectFrom('provider_events').selectAll().executeTakeFirstOrThrow();
  assert.equal(row.event_key, event.id);
  assert.equal(row.event_type, 'payment_intent.succeeded');
  assert.equal(row.status, 'processed');
});

test('payment_intent.payment_failed then succeeded: one payment, past_due then active; a late failure changes nothing', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const subscription = await createSubscription(app, { plan: { currency: 'USD', amount: 2000 } });
  await app.request('POST', '/api/notify'); // unrelated noise: 400, nothing stored
  const metadata = { subscription_id: subscription.id };
  const failedIntent = stripePaymentIntent({
    amount: 2000,
    metadata,
    status: 'requires_payment_method',
    error: 'Your card was declined.',
  });
  await postStripe(app, stripeEvent('payment_intent.payment_failed', failedIntent));
  let payment = await onlyPayment(app);
  assert.equal(payment.status, 'failed');
  assert.equal(payment.failure_reason, 'Your card was declined.');
  assert.equal(payment.subscription_id, subscription.id);
  // incomplete has no failure transition: it stays incomplete (SPEC §4).
  assert.equal((await subscriptionOf(app, subscription.id)).status, 'incomplete');

  app.clock.advance(60_000);
  const succeeded = { ...failedIntent, status: 'succeeded', amount_received: 2000, last_payment_error: null };
  await postStripe(app, stripeEvent('payment_intent.succeeded', succeeded));
  payment = await onlyPayment(app);
  assert.equal(payment.status, 'succeeded');
  assert.equal(payment.failure_reason, null);
  assert.equal(payment.paid_at, '2026-01-15T10:00:00.000Z');
  const active = await subscriptionOf(app, subscription.id);
  assert.equal(active.status, 'active');

  await postStripe(app, stripeEvent('payment_intent.payment_failed', failedIntent));
  assert.equal((await onlyPayment(app)).status, 'succeeded');
  assert.deepEqual(await subscriptionOf(app, subscription.id), active);
  assert.equal((await topics(app, 'payment.failed')).length, 1);
  assert.equal((await topics(app, 'payment.succeeded')).length, 1);
});

for (const [first, second] of [
  ['legacy', 'basil'],
  ['basil', 'legacy'],
] as const) {
  test(`invoice events find the subscription by API version: ${first} paid, then ${second} failed without metadata`, async (t) => {
    const app = await buildTestApp(t, { env: PROVIDER_ENV });
    const subscription = await createSubscription(app, { plan: { currency: 'USD', amount: 2000 } });
    const stripeSubscription = `sub_${nextSeq()}`;
    const paid = stripeInvoice({
      style: first,
      subscription: stripeSubscription,
      paymentIntent: `pi_${nextSeq()}`,
      subscriptionMetadata: { subscription_id: subscription.id },
    });
    await postStripe(app, stripeEvent('invoice.paid', paid));
    const payment = await onlyPayment(app);
    assert.equal(payment.subscription_id, subscription.id);
    assert.equal(payment.customer_id, subscription.customer_id);
    assert.equal((await subscriptionOf(app, subscription.id)).status, 'active');

    app.clock.advance(60_000);
    const failed = stripeInvoice({ style: second, subscription: stripeSubscription, paid: false, amount: 2000 });
    const failure = stripeEvent('invoice.payment_failed', failed);
    failure.created += 60; // the next period's charge failed after the first was paid
    await postStripe(app, failure);
    const failedPayment = (await app.request('GET', '/api/payments?status=failed')).body.data[0];
    assert.equal(failedPayment.provider_reference, failed.id, 'no PaymentIntent named: the invoice is the reference');
    assert.equal(failedPayment.subscription_id, subscription.id);
    assert.equal(failedPayment.failure_reason, 'invoice payment failed');
    assert.equal((await subscriptionOf(app, subscription.id)).status, 'past_due');
  });
}

for (const order of ['intent first', 'invoice first'] as const) {
  for (const style of ['legacy', 'basil'] as const) {
    test(`a payment reported by payment_intent.succeeded and invoice.paid (${style}) is one payment, ${order}`, async (t) => {
      const app = await buildTestApp(t, { env: PROVIDER_ENV });
      const subscription = await createSubscription(app, { plan: { currency: 'USD', amount: 2000 } });
      const intent = stripePaymentIntent({ amount: 2000, email: null });
      const invoice = stripeInvoice({
        style,
        subscription: `sub_${nextSeq()}`,
        paymentIntent: intent.id,
        subscriptionMetadata: { subscription_id: subscription.id },
      });
      const events = [stripeEvent('payment_intent.succeeded', intent), stripeEvent('invoice.paid', invoice)];
      if (order === 'invoice first') events.reverse();
      for (const event of events) assert.equal((await postStripe(app, event)).status, 200);

      const payment = await onlyPayment(app);
      assert.equal(payment.provider_reference, intent.id);
      assert.equal(payment.subscription_id, subscription.id);
      assert.equal(payment.customer_id, subscription.customer_id);
      assert.equal(payment.amount, 2000);
      const after = await subscriptionOf(app, subscription.id);
      assert.equal(after.status, 'active');
      // Activated once: one period, not two.
      assert.equal(after.current_period_end, '2026-02-15T10:00:00.000Z');
      assert.equal(
        (await topics(app, 'subscription.updated')).length + (await topics(app, 'subscription.renewed')).length,
        1,
      );
      assert.deepEqual(await inboxStatuses(app), ['processed', 'processed']);
    });
  }
}

test('a $0 invoice moves no money: stored and ignored', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const invoice = stripeInvoice({ style: 'basil', subscription: 'sub_trial', amount: 0 });
  await postStripe(app, stripeEvent('invoice.paid', invoice));
  assert.equal((await payments(app)).meta.total, 0);
  assert.deepEqual(await inboxStatuses(app), ['ignored']);
});

test('a zero-amount failure owes nothing: stored and ignored, no payment, no past_due, no dunning case', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const subscription = await createSubscription(app, { plan: { currency: 'USD', amount: 2000 } });
  const metadata = { subscription_id: subscription.id };
  await postStripe(app, stripeEvent('payment_intent.succeeded', stripePaymentIntent({ amount: 2000, metadata })));
  const active = await subscriptionOf(app, subscription.id);
  assert.equal(active.status, 'active');
  // Stripe's dashboard test event: an invoice of 0 that "failed".
  const invoice = stripeInvoice({
    style: 'basil',
    subscription: 'sub_test',
    amount: 0,
    paid: false,
    subscriptionMetadata: metadata,
  });
  const failures = [
    { ...stripeEvent('invoice.payment_failed', invoice), created: 1768471260 },
    {
      ...stripeEvent(
        'payment_intent.payment_failed',
        stripePaymentIntent({ amount: 0, metadata, status: 'requires_payment_method', error: 'Declined' }),
      ),
      created: 1768471260,
    },
  ];
  for (const failure of failures) assert.equal((await postStripe(app, failure)).status, 200);
  assert.equal((await payments(app)).meta.total, 1);
  assert.deepEqual(await inboxStatuses(app), ['processed', 'ignored', 'ignored']);
  assert.deepEqual(await subscriptionOf(app, subscription.id), active);
  assert.equal((await app.request('GET', '/api/dunning/cases?status=open')).body.total, 0);
});

test("a payment's amount and currency come from one report: a report in another currency is refused, in either order", async (t) => {
  async function run(failedFirst: boolean) {
    const app = await buildTestApp(t, { env: PROVIDER_ENV });
    const failedIntent = stripePaymentIntent({
      amount: 100,
      currency: 'usd',
      status: 'requires_payment_method',
      error: 'Declined',
    });
    const succeeded = {
      ...failedIntent,
      status: 'succeeded',
      amount: 15000,
      amount_received: 15000,
      currency: 'jpy',
      last_payment_error: null,
    };
    const events = [
      stripeEvent('payment_intent.payment_failed', failedIntent),
      stripeEvent('payment_intent.succeeded', succeeded),
    ];
    if (!failedFirst) events.reverse();
    for (const event of events) assert.equal((await postStripe(app, event)).status, 200);
    const payment = await onlyPayment(app);
    const refused = await app.deps.db
      .selectFrom('provider_events')
      .selectAll()
      .where('event_key', '=', events[1]!.id)
      .executeTakeFirstOrThrow();
    assert.equal(refused.status, 'failed');
    assert.equal(refused.next_attempt_at, null);
    const recorded = await topics(app, failedFirst ? 'payment.failed' : 'payment.succeeded');
    assert.equal((await topics(app, 'payment.failed')).length + (await topics(app, 'payment.succeeded')).length, 1);
    assert.deepEqual(recorded[0]!.data, payment);
    return { status: payment.status, amount: payment.amount, currency: payment.currency, reason: refused.error };
  }
  assert.deepEqual(await run(true), {
    status: 'failed',
    amount: 100,
    currency: 'USD',
    reason: "UnusableEventError: currency JPY differs from the payment's USD",
  });
  assert.deepEqual(await run(false), {
    status: 'succeeded',
    amount: 15000,
    currency: 'JPY',
    reason: "UnusableEventError: currency USD differs from the payment's JPY",
  });
});

test('refund.created and refund.updated for one refund, and charge.refunded, make one refund in any order', async (t) => {
  const orders = [
    [0, 1, 2],
    [2, 1, 0],
    [1, 2, 0],
  ];
  const finals = [];
  for (const order of orders) {
    const app = await buildTestApp(t, { env: PROVIDER_ENV });
    const intent = stripePaymentIntent({ amount: 5000 });
    await postStripe(app, stripeEvent('payment_intent.succeeded', intent));
    const refund = stripeRefund({ paymentIntent: intent.id, amount: 1500 });
    const events = [
      stripeEvent('refund.created', refund),
      stripeEvent('refund.updated', { ...refund, metadata: { note: 'updated' } }),
      stripeEvent(
        'charge.refunded',
        stripeRefundedCharge({ paymentIntent: intent.id, amount: 5000, amountRefunded: 1500 }),
      ),
    ];
    for (const i of order) assert.equal((await postStripe(app, events[i])).status, 200);
    const payment = await onlyPayment(app);
    const refunds = (await app.request('GET', '/api/refunds')).body;
    assert.deepEqual(
      refunds.data.map((r: { provider_reference: string; amount: number }) => [r.provider_reference, r.amount]),
      [[refund.id, 1500]],
    );
    finals.push({
      status: payment.status,
      refunded: payment.amount_refunded,
      refunds: refunds.meta.total,
      refundedEvents: (await topics(app, 'payment.refunded')).length,
    });
  }
  assert.deepEqual(finals[0], { status: 'partially_refunded', refunded: 1500, refunds: 1, refundedEvents: 1 });
  assert.deepEqual(finals[1], finals[0]);
  assert.deepEqual(finals[2], finals[0]);
});

test('charge.refunded listing its refunds (older API versions) records each; the total reaches refunded', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const intent = stripePaymentIntent({ amount: 3000 });
  await postStripe(app, stripeEvent('payment_intent.succeeded', intent));
  const first = stripeRefund({ paymentIntent: intent.id, amount: 1000 });
  const second = stripeRefund({ paymentIntent: intent.id, amount: 2000 });
  const pending = stripeRefund({ paymentIntent: intent.id, amount: 500, status: 'pending' });
  const charge = stripeRefundedCharge({
    paymentIntent: intent.id,
    amount: 3000,
    amountRefunded: 3000,
    refunds: [first, second, pending],
  });
  await postStripe(app, stripeEvent('charge.refunded', charge));
  await postStripe(app, stripeEvent('refund.created', first));
  const payment = await onlyPayment(app);
  assert.equal(payment.status, 'refunded');
  assert.equal(payment.amount_refunded, 3000);
  const refunds = (await app.request('GET', '/api/refunds?sort_by=amount&sort_order=asc')).body;
  assert.deepEqual(
    refunds.data.map((r: { provider_reference: string }) => r.provider_reference),
    [first.id, second.id],
  );
});

test('a refund that is not succeeded yet is ignored until an update says succeeded', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const intent = stripePaymentIntent({ amount: 5000 });
  await postStripe(app, stripeEvent('payment_intent.succeeded', intent));
  const refund = stripeRefund({ paymentIntent: intent.id, amount: 5000, status: 'pending' });
  await postStripe(app, stripeEvent('refund.created', refund));
  assert.equal((await onlyPayment(app)).amount_refunded, 0);
  await postStripe(app, stripeEvent('refund.updated', { ...refund, status: 'succeeded' }));
  const payment = await onlyPayment(app);
  assert.equal(payment.status, 'refunded');
  assert.deepEqual(await inboxStatuses(app), ['processed', 'ignored', 'processed']);
});

test('a refund before its payment (and a failed attempt) is held until the payment succeeds', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const intent = stripePaymentIntent({ amount: 4000 });
  await postStripe(app, stripeEvent('refund.created', stripeRefund({ paymentIntent: intent.id, amount: 4000 })));
  assert.deepEqual(await inboxStatuses(app), ['held']);
  await postStripe(
    app,
    stripeEvent('payment_intent.payment_failed', { ...intent, status: 'requires_payment_method', error: null }),
  );
  assert.equal((await onlyPayment(app)).status, 'failed');
  assert.deepEqual(await inboxStatuses(app), ['held', 'processed']);
  await postStripe(app, stripeEvent('payment_intent.succeeded', intent));
  const payment = await onlyPayment(app);
  assert.equal(payment.status, 'refunded');
  assert.equal(payment.amount_refunded, 4000);
  assert.deepEqual(await inboxStatuses(app), ['processed', 'processed', 'processed']);
});

test('a repeated event id is a duplicate; unhandled Stripe types are stored and ignored', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const event = stripeEvent('payment_intent.succeeded', stripePaymentIntent());
  for (let i = 0; i < 3; i++) assert.equal((await postStripe(app, event)).status, 200);
  await postStripe(app, stripeEvent('customer.subscription.updated', { id: 'sub_1', object: 'subscription' }));
  assert.equal((await payments(app)).meta.total, 1);
  assert.deepEqual(await inboxStatuses(app), ['processed', 'ignored']);
});

test('a payment reported failed, then succeeded for less: the amount is what was received, in either order', async (t) => {
  async function run(failedFirst: boolean) {
    const app = await buildTestApp(t, { env: PROVIDER_ENV });
    const failedIntent = stripePaymentIntent({
      amount: 2000,
      email: 'partial@example.com',
      status: 'requires_payment_method',
      error: 'Declined',
    });
    // A partial capture: Stripe received 1500 of the 2000 the intent asked for.
    const succeeded = { ...failedIntent, status: 'succeeded', amount_received: 1500, last_payment_error: null };
    const events = [
      stripeEvent('payment_intent.payment_failed', failedIntent),
      stripeEvent('payment_intent.succeeded', succeeded),
    ];
    for (const event of failedFirst ? events : events.reverse())
      assert.equal((await postStripe(app, event)).status, 200);
    const payment = await onlyPayment(app);
    return { status: payment.status, amount: payment.amount };
  }
  assert.deepEqual(await run(true), { status: 'succeeded', amount: 1500 });
  assert.deepEqual(await run(false), { status: 'succeeded', amount: 1500 });
});
