import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import { createCustomer, createSubscription } from '../../test/helpers/factories.ts';
import {
  nextSeq,
  PROVIDER_ENV,
  paystackCharge,
  paystackInvoiceFailed,
  paystackRefund,
  postPaystack,
} from '../../test/helpers/provider-events.ts';

async function eventsOf(app: TestApp, topic: string) {
  return (await app.request('GET', `/api/events?topic=${topic}&limit=100`)).body.data as { data: any }[];
}

async function onlyPayment(app: TestApp) {
  const list = await app.request('GET', '/api/payments');
  assert.equal(list.body.meta.total, 1);
  return list.body.data[0];
}

async function inboxRows(app: TestApp) {
  return app.deps.db.selectFrom('provider_events').selectAll().orderBy('received_at').orderBy('id').execute();
}

test('charge.success records a payment for a customer created from the email', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const charge = paystackCharge({ amount: 750000, email: 'New.Payer@Example.com' });
  const res = await postPaystack(app, charge);
  assert.equal(res.status, 200);
  assert.deepEqual(res.body, { received: true });

  const customers = (await app.request('GET', '/api/customers')).body;
  assert.equal(customers.meta.total, 1);
  assert.equal(customers.data[0].email, 'New.Payer@Example.com');
  assert.equal(customers.data[0].name, 'Ada Obi');
  const payment = await onlyPayment(app);
  assert.match(payment.id, /^pay_[0-9A-Z]{26}$/);
  assert.deepEqual(
    { ...payment, id: undefined },
    {
      id: undefined,
      customer_id: customers.data[0].id,
      subscription_id: null,
      invoice_id: null,
      provider: 'paystack',
      provider_reference: charge.data.reference,
      amount: 750000,
      amount_refunded: 0,
      currency: 'NGN',
      status: 'succeeded',
      failure_reason: null,
      paid_at: '2026-01-15T09:59:58.000Z',
      created_at: '2026-01-15T10:00:00.000Z',
      updated_at: '2026-01-15T10:00:00.000Z',
    },
  );
  assert.deepEqual((await app.request('GET', `/api/payments/${payment.id}`)).body, payment);
  const succeeded = await eventsOf(app, 'payment.succeeded');
  assert.equal(succeeded.length, 1);
  assert.deepEqual(succeeded[0]!.data, payment);
  assert.equal((await eventsOf(app, 'customer.created')).length, 1);
  const [row] = await inboxRows(app);
  assert.equal(row!.status, 'processed');
  assert.equal(row!.event_type, 'charge.success');
  assert.equal(row!.event_key, `charge.success:${charge.data.id}`);
  assert.equal(row!.attempts, 1);
  assert.equal(row!.processed_at, '2026-01-15T10:00:00.000Z');
  assert.equal(row!.payload, JSON.stringify(charge));
});

test('a payer whose email matches a customer (any case) is that customer; no new customer', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const customer = await createCustomer(app, { email: 'known@example.com' });
  await postPaystack(app, paystackCharge({ email: 'KNOWN@example.COM' }));
  assert.equal((await onlyPayment(app)).customer_id, customer.id);
  assert.equal((await app.request('GET', '/api/customers')).body.meta.total, 1);
});

test('metadata as object, "", 0 or a JSON string: all read, none breaks processing', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const named = await createCustomer(app);
  const variants: [unknown, string | null][] = [
    ['', null],
    [0, null],
    [null, null],
    [{}, null],
    [{ customer_id: named.id, custom_fields: [{ display_name: 'Plan', value: 'pro' }] }, named.id],
    [JSON.stringify({ customer_id: named.id }), named.id],
  ];
  for (const [metadata, expected] of variants) {
    const email = `variant${nextSeq()}@example.com`;
    const charge = paystackCharge({ metadata, email });
    assert.equal((await postPaystack(app, charge)).status, 200);
    const payment = (await app.request('GET', `/api/payments?limit=1`)).body.data[0];
    assert.equal(payment.provider_reference, charge.data.reference);
    if (expected) assert.equal(payment.customer_id, expected, JSON.stringify(metadata));
    else assert.notEqual(payment.customer_id, named.id, JSON.stringify(metadata));
  }
  const rows = await inboxRows(app);
  assert.deepEqual(
    rows.map((r) => r.status),
    variants.map(() => 'processed'),
  );
});

test('metadata attribution activates the subscription; a later failure by subscription code makes it past_due', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const subscription = await createSubscription(app);
  assert.equal(subscription.status, 'incomplete');
  const code = `SUB_${nextSeq()}`;
  const charge = paystackCharge({
    amount: 5000,
    metadata: { customer_id: subscription.customer_id, subscription_id: subscription.id },
    subscriptionCode: code,
    email: 'someone.else@example.com',
  });
  await postPaystack(app, charge);
  const payment = await onlyPayment(app);
  assert.equal(payment.customer_id, subscription.customer_id);
  assert.equal(payment.subscription_id, subscription.id);
  const active = (await app.request('GET', `/api/subscriptions/${subscription.id}`)).body;
  assert.equal(active.status, 'active');
  assert.equal(active.current_period_start, '2026-01-15T10:00:00.000Z');
  assert.equal(active.current_period_end, '2026-02-15T10:00:00.000Z');
  // The email belonged to nobody, but metadata named the customer: no customer is created.
  assert.equal((await app.request('GET', '/api/customers')).body.meta.total, 1);

  app.clock.advance(60_000);
  const failure = paystackInvoiceFailed({
    subscriptionCode: code,
    amount: 5000,
    transaction: {
      reference: `T${nextSeq()}`,
      status: 'failed',
      amount: 5000,
      currency: 'NGN',
      gateway_response: 'Insufficient Funds',
    },
  });
  assert.equal((await postPaystack(app, failure)).status, 200);
  const failed = (await app.request('GET', '/api/payments?status=failed')).body.data[0];
  assert.equal(failed.subscription_id, subscription.id);
  assert.equal(failed.customer_id, subscription.customer_id);
  assert.equal(failed.failure_reason, 'Insufficient Funds');
  assert.equal(failed.paid_at, null);
  assert.equal((await app.request('GET', `/api/subscriptions/${subscription.id}`)).body.status, 'past_due');
  const failedEvents = await eventsOf(app, 'payment.failed');
  assert.deepEqual(failedEvents[0]!.data, failed);
  // Dunning hooks into the payment effect: the failure opened a case for this payment.
  const cases = (await app.request('GET', '/api/dunning/cases')).body;
  assert.equal(cases.total, 1);
  assert.equal(cases.data[0].payment_id, failed.id);
  assert.equal(cases.data[0].subscription_id, subscription.id);
  assert.equal(cases.data[0].currency, 'NGN');

  // The next successful charge (metadata-less, found by the subscription code, paid after
  // the failure) recovers it.
  app.clock.advance(60_000);
  const next = paystackCharge({ amount: 5000, subscriptionCode: code });
  next.data.paid_at = '2026-01-15T10:01:59.000Z';
  await postPaystack(app, next);
  assert.equal((await app.request('GET', `/api/subscriptions/${subscription.id}`)).body.status, 'active');
  assert.equal((await app.request('GET', '/api/dunning/cases?status=recovered')).body.total, 1);
});

test('a zero-amount invoice.payment_failed is stored and ignored: the subscription stays active, no dunning case', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const subscription = await createSubscription(app);
  const code = `SUB_${nextSeq()}`;
  await postPaystack(app, paystackCharge({ subscriptionCode: code, metadata: { subscription_id: subscription.id } }));
  const active = (await app.request('GET', `/api/subscriptions/${subscription.id}`)).body;
  assert.equal(active.status, 'active');
  app.clock.advance(60_000);
  assert.equal((await postPaystack(app, paystackInvoiceFailed({ subscriptionCode: code, amount: 0 }))).status, 200);
  assert.deepEqual(
    (await inboxRows(app)).map((r) => r.status),
    ['processed', 'ignored'],
  );
  assert.equal((await app.request('GET', '/api/payments?status=failed')).body.meta.total, 0);
  assert.deepEqual((await app.request('GET', `/api/subscriptions/${subscription.id}`)).body, active);
  assert.equal((await app.request('GET', '/api/dunning/cases?status=open')).body.total, 0);
});

test('invoice.payment_failed with an empty transaction takes the currency from the subscription plan', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const subscription = await createSubscription(app, { plan: { currency: 'GHS' } });
  const code = `SUB_${nextSeq()}`;
  await postPaystack(
    app,
    paystackCharge({
      amount: 5000,
      currency: 'GHS',
      metadata: { subscription_id: subscription.id },
      subscriptionCode: code,
    }),
  );
  const failure = paystackInvoiceFailed({ subscriptionCode: code, amount: 5000 });
  await postPaystack(app, failure);
  const failed = (await app.request('GET', '/api/payments?status=failed')).body.data[0];
  assert.equal(failed.currency, 'GHS');
  assert.equal(failed.provider_reference, failure.data.invoice_code);
  assert.equal(failed.failure_reason, 'subscription charge failed');

  // Unknown subscription code and no currency anywhere: kept as failed, a retry cannot help.
  await postPaystack(app, paystackInvoiceFailed({ subscriptionCode: 'SUB_unknown' }));
  const row = (await inboxRows(app)).at(-1)!;
  assert.equal(row.status, 'failed');
  assert.match(row.error ?? '', /currency is missing/);
  assert.equal(row.next_attempt_at, null);
});

test('metadata naming another customer’s subscription attributes the customer only', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const theirs = await createSubscription(app);
  const mine = await createCustomer(app);
  await postPaystack(app, paystackCharge({ metadata: { customer_id: mine.id, subscription_id: theirs.id } }));
  const payment = await onlyPayment(app);
  assert.equal(payment.customer_id, mine.id);
  assert.equal(payment.subscription_id, null);
  assert.equal((await app.request('GET', `/api/subscriptions/${theirs.id}`)).body.status, 'incomplete');
});

test('a duplicate delivery is answered 200 and has no effect', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const subscription = await createSubscription(app);
  const charge = paystackCharge({ metadata: { subscription_id: subscription.id } });
  const body = JSON.stringify(charge);
  assert.equal((await postPaystack(app, body)).status, 200);
  const first = (await app.request('GET', `/api/subscriptions/${subscription.id}`)).body;
  app.clock.advance(3_600_000);
  for (let i = 0; i < 3; i++) {
    const again = await postPaystack(app, body);
    assert.equal(again.status, 200);
    assert.deepEqual(again.body, { received: true });
  }
  // The same event re-serialized (new bytes, same event key) is a duplicate too.
  assert.equal((await postPaystack(app, JSON.stringify(charge, null, 1))).status, 200);
  assert.equal((await app.request('GET', '/api/payments')).body.meta.total, 1);
  assert.equal((await eventsOf(app, 'payment.succeeded')).length, 1);
  assert.deepEqual((await app.request('GET', `/api/subscriptions/${subscription.id}`)).body, first);
  assert.equal((await inboxRows(app)).length, 1);
});

test('refund.processed: partial then full, amounts as strings; a refund beyond the amount is refused', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const charge = paystackCharge({ amount: 500000 });
  await postPaystack(app, charge);
  const reference = charge.data.reference;

  app.clock.advance(1000);
  await postPaystack(app, paystackRefund({ transactionReference: reference, amount: '200000' }));
  let payment = await onlyPayment(app);
  assert.equal(payment.status, 'partially_refunded');
  assert.equal(payment.amount_refunded, 200000);
  assert.equal(payment.updated_at, '2026-01-15T10:00:01.000Z');
  const refunded = await eventsOf(app, 'payment.refunded');
  assert.equal(refunded.length, 1);
  assert.deepEqual(refunded[0]!.data, payment);

  await postPaystack(app, paystackRefund({ transactionReference: reference, amount: 300000 }));
  payment = await onlyPayment(app);
  assert.equal(payment.status, 'refunded');
  assert.equal(payment.amount_refunded, 500000);

  // Nothing remains: a further refund is refused (kept failed in the inbox), not recorded.
  await postPaystack(app, paystackRefund({ transactionReference: reference, amount: '100' }));
  assert.deepEqual(await onlyPayment(app), payment);
  const refused = (await inboxRows(app)).filter((row) => row.status === 'failed');
  assert.equal(refused.length, 1);
  assert.match(refused[0]!.error ?? '', /of 100 exceeds the 0 remaining/);
  const refunds = (await app.request('GET', `/api/refunds?payment_id=${payment.id}&sort_by=amount&sort_order=asc`))
    .body;
  assert.equal(refunds.meta.total, 2);
  assert.deepEqual(
    refunds.data.map((r: { amount: number }) => r.amount),
    [200000, 300000],
  );
  assert.equal(refunds.data[0].currency, 'NGN');
  assert.equal(refunds.data[0].status, 'succeeded');
  assert.deepEqual((await app.request('GET', `/api/refunds/${refunds.data[0].id}`)).body, refunds.data[0]);
  assert.equal((await eventsOf(app, 'payment.refunded')).length, 2);
});

test('a refund without a refund reference is keyed by its charge: a redelivery is a duplicate', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const charge = paystackCharge({ amount: 1000 });
  await postPaystack(app, charge);
  const refund = paystackRefund({ transactionReference: charge.data.reference, amount: '400', refundReference: null });
  await postPaystack(app, refund);
  await postPaystack(app, refund);
  const payment = await onlyPayment(app);
  assert.equal(payment.amount_refunded, 400);
  assert.equal((await app.request('GET', '/api/refunds')).body.meta.total, 1);
});

test('a refund before its payment is held, then applied: both orders end in the same state', async (t) => {
  async function run(refundFirst: boolean) {
    const app = await buildTestApp(t, { env: PROVIDER_ENV });
    const charge = paystackCharge({ amount: 9000, email: 'order@example.com' });
    const refund = paystackRefund({ transactionReference: charge.data.reference, amount: '9000' });
    const steps = refundFirst ? [refund, charge] : [charge, refund];
    const first = await postPaystack(app, steps[0]);
    assert.equal(first.status, 200);
    if (refundFirst) {
      assert.equal((await app.request('GET', '/api/refunds')).body.meta.total, 0);
      assert.equal((await inboxRows(app))[0]!.status, 'held');
    }
    await postPaystack(app, steps[1]);
    const payment = await onlyPayment(app);
    const refunds = (await app.request('GET', '/api/refunds')).body;
    const rows = await inboxRows(app);
    return {
      payment: { status: payment.status, amount: payment.amount, amount_refunded: payment.amount_refunded },
      refunds: refunds.data.map((r: { amount: number; provider_reference: string }) => [
        r.amount,
        r.provider_reference,
      ]),
      inbox: rows.map((r) => r.status),
      topics: (await app.request('GET', '/api/events?sort_order=asc')).body.data.map((e: { topic: string }) => e.topic),
    };
  }
  const refundFirst = await run(true);
  const paymentFirst = await run(false);
  assert.deepEqual(refundFirst.payment, { status: 'refunded', amount: 9000, amount_refunded: 9000 });
  assert.deepEqual(refundFirst.payment, paymentFirst.payment);
  assert.equal(refundFirst.refunds.length, 1);
  assert.deepEqual(
    refundFirst.refunds.map((r: unknown[]) => r[0]),
    paymentFirst.refunds.map((r: unknown[]) => r[0]),
  );
  assert.deepEqual(refundFirst.inbox, ['processed', 'processed']);
  assert.deepEqual(refundFirst.topics, paymentFirst.topics);
});

test('a refund whose currency differs from its payment is kept as failed', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const charge = paystackCharge({ amount: 1000 });
  await postPaystack(app, charge);
  await postPaystack(
    app,
    paystackRefund({ transactionReference: charge.data.reference, amount: '10', currency: 'USD' }),
  );
  const row = (await inboxRows(app)).at(-1)!;
  assert.equal(row.status, 'failed');
  assert.match(row.error ?? '', /currency USD differs/);
  assert.equal((await onlyPayment(app)).amount_refunded, 0);
});

test('unhandled Paystack types are stored and ignored', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const res = await postPaystack(app, { event: 'transfer.success', data: { id: 77, amount: 100, reference: 'TRF_1' } });
  assert.equal(res.status, 200);
  const [row] = await inboxRows(app);
  assert.equal(row!.status, 'ignored');
  assert.equal(row!.event_key, 'transfer.success:77');
  assert.equal((await app.request('GET', '/api/events')).body.meta.total, 0);
});

test('a payment before the renewal pays the next period in advance (subscription.renewed); after cancel a payment is recorded but revives nothing', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const subscription = await createSubscription(app);
  const metadata = { subscription_id: subscription.id };
  await postPaystack(app, paystackCharge({ amount: 5000, metadata }));
  const active = (await app.request('GET', `/api/subscriptions/${subscription.id}`)).body;
  assert.equal(active.current_period_end, '2026-02-15T10:00:00.000Z');

  app.clock.set(new Date('2026-02-14T10:00:00.000Z'));
  await postPaystack(app, paystackCharge({ amount: 5000, metadata }));
  const renewed = (await app.request('GET', `/api/subscriptions/${subscription.id}`)).body;
  assert.equal(renewed.status, 'active');
  // The period moves at the renewal, not at the payment (SPEC §4); the next one is paid.
  assert.equal(renewed.current_period_end, '2026-02-15T10:00:00.000Z');
  const invoices = (
    await app.request('GET', `/api/invoices?subscription_id=${subscription.id}&sort_by=due_at&sort_order=asc`)
  ).body;
  assert.deepEqual(
    invoices.data.map((i: { period_start: string; status: string }) => [i.period_start, i.status]),
    [
      ['2026-01-15T10:00:00.000Z', 'paid'],
      ['2026-02-15T10:00:00.000Z', 'paid'],
    ],
  );
  assert.equal((await eventsOf(app, 'subscription.renewed')).length, 1);

  assert.equal((await app.request('PUT', `/api/subscriptions/${subscription.id}/cancel`)).status, 200);
  await postPaystack(app, paystackCharge({ amount: 5000, metadata }));
  assert.equal((await app.request('GET', `/api/payments?subscription_id=${subscription.id}`)).body.meta.total, 3);
  assert.equal((await app.request('GET', `/api/subscriptions/${subscription.id}`)).body.status, 'cancelled');
});
