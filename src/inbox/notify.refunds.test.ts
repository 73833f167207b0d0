// Refunds through POST /api/notify (SPEC §5 "Refunds"): `amount_refunded` is always the sum
// of the payment's succeeded refunds and never above `amount`; a refund beyond what remains
// is refused (inbox failed, with the reason); a refund that fails or is cancelled after
// succeeding becomes failed, lowers `amount_refunded` and emits `payment.refund_failed`.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import {
  PROVIDER_ENV,
  paystackCharge,
  paystackRefund,
  postPaystack,
  postStripe,
  stripeEvent,
  stripePaymentIntent,
  stripeRefund,
  stripeRefundedCharge,
} from '../../test/helpers/provider-events.ts';

async function onlyPayment(app: TestApp) {
  const list = (await app.request('GET', '/api/payments')).body;
  assert.equal(list.meta.total, 1);
  return list.data[0];
}

async function refundsOf(app: TestApp, paymentId: string) {
  const list = (await app.request('GET', `/api/refunds?payment_id=${paymentId}&limit=100&sort_order=asc`)).body;
  return list.data as { provider_reference: string; amount: number; status: string }[];
}

async function topicData(app: TestApp, topic: string) {
  const list = (await app.request('GET', `/api/events?topic=${topic}&limit=100&sort_order=asc`)).body;
  return list.data.map((event: { data: unknown }) => event.data);
}

async function inbox(app: TestApp) {
  return app.deps.db.selectFrom('provider_events').selectAll().orderBy('received_at').orderBy('id').execute();
}

/** amount_refunded is the sum of the succeeded refunds the API lists, and within the amount. */
async function assertInvariant(app: TestApp) {
  const payment = await onlyPayment(app);
  const refunds = await refundsOf(app, payment.id);
  const succeeded = refunds
    .filter((refund) => refund.status === 'succeeded')
    .reduce((sum, refund) => sum + refund.amount, 0);
  assert.equal(payment.amount_refunded, succeeded);
  assert.ok(payment.amount_refunded <= payment.amount);
  return { payment, refunds };
}

test('four refunds of 4000 on a 10000 payment: two succeed, the rest are refused with what remains', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const charge = paystackCharge({ amount: 10000 });
  await postPaystack(app, charge);
  for (let i = 0; i < 4; i++) {
    app.clock.advance(1000);
    const res = await postPaystack(
      app,
      paystackRefund({ transactionReference: charge.data.reference, amount: '4000' }),
    );
    assert.equal(res.status, 200);
  }
  const { payment, refunds } = await assertInvariant(app);
  assert.equal(payment.amount_refunded, 8000);
  assert.equal(payment.status, 'partially_refunded');
  assert.deepEqual(
    refunds.map((refund) => [refund.amount, refund.status]),
    [
      [4000, 'succeeded'],
      [4000, 'succeeded'],
    ],
  );
  const rows = await inbox(app);
  assert.deepEqual(
    rows.map((row) => row.status),
    ['processed', 'processed', 'processed', 'failed', 'failed'],
  );
  assert.match(rows[3]!.error!, new RegExp(`refund \\S+ of 4000 exceeds the 2000 remaining on payment ${payment.id}$`));
  assert.equal(rows[3]!.next_attempt_at, null);
  assert.equal((await topicData(app, 'payment.refunded')).length, 2);
});

test('a refund of 999,999,999 on a 10000 payment is refused and changes nothing', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const charge = paystackCharge({ amount: 10000 });
  await postPaystack(app, charge);
  const before = await onlyPayment(app);
  app.clock.advance(1000);
  await postPaystack(app, paystackRefund({ transactionReference: charge.data.reference, amount: '999999999' }));
  assert.deepEqual(await onlyPayment(app), before);
  assert.deepEqual(await refundsOf(app, before.id), []);
  const rows = await inbox(app);
  assert.equal(rows[1]!.status, 'failed');
  assert.match(rows[1]!.error!, /of 999999999 exceeds the 10000 remaining/);
  assert.deepEqual(await topicData(app, 'payment.refunded'), []);
});

test('Stripe charge.refunded listing refunds beyond the amount is refused whole: nothing written', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const intent = stripePaymentIntent({ amount: 3000 });
  await postStripe(app, stripeEvent('payment_intent.succeeded', intent));
  const refunds = [
    stripeRefund({ paymentIntent: intent.id, amount: 2000 }),
    stripeRefund({ paymentIntent: intent.id, amount: 2000 }),
  ];
  const charge = stripeRefundedCharge({ paymentIntent: intent.id, amount: 3000, amountRefunded: 3000, refunds });
  await postStripe(app, stripeEvent('charge.refunded', charge));
  const { payment } = await assertInvariant(app);
  assert.equal(payment.amount_refunded, 0);
  assert.deepEqual(await refundsOf(app, payment.id), []);
  assert.equal((await inbox(app))[1]!.status, 'failed');
});

test('Stripe charge.refunded without its refunds list (API ≥ 2022-11-15) is ignored: a bare total is not money', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const intent = stripePaymentIntent({ amount: 3000 });
  await postStripe(app, stripeEvent('payment_intent.succeeded', intent));
  await postStripe(
    app,
    stripeEvent(
      'charge.refunded',
      stripeRefundedCharge({ paymentIntent: intent.id, amount: 3000, amountRefunded: 3000 }),
    ),
  );
  assert.equal((await onlyPayment(app)).amount_refunded, 0);
  const row = (await inbox(app))[1]!;
  assert.equal(row.status, 'ignored');
});

test('Paystack refund.failed after refund.processed: the refund becomes failed, amount_refunded goes back down, payment.refund_failed', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const charge = paystackCharge({ amount: 10000 });
  await postPaystack(app, charge);
  const options = { transactionReference: charge.data.reference, amount: '3000', refundReference: 'RF_reversed' };
  await postPaystack(app, paystackRefund({ transactionReference: charge.data.reference, amount: '2000' }));
  await postPaystack(app, paystackRefund(options));
  assert.equal((await onlyPayment(app)).amount_refunded, 5000);

  app.clock.advance(60_000);
  await postPaystack(app, paystackRefund({ ...options, failed: true }));
  const { payment, refunds } = await assertInvariant(app);
  assert.equal(payment.amount_refunded, 2000);
  assert.equal(payment.status, 'partially_refunded');
  assert.equal(payment.updated_at, app.clock.now().toISOString());
  assert.deepEqual(refunds.map((refund) => refund.status).sort(), ['failed', 'succeeded']);
  assert.deepEqual(await topicData(app, 'payment.refund_failed'), [payment]);

  // What the failed refund held is free again.
  await postPaystack(app, paystackRefund({ transactionReference: charge.data.reference, amount: '8000' }));
  assert.equal((await assertInvariant(app)).payment.status, 'refunded');
});

test('a full refund reversed puts the payment back to succeeded', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const intent = stripePaymentIntent({ amount: 5000 });
  await postStripe(app, stripeEvent('payment_intent.succeeded', intent));
  const refund = stripeRefund({ paymentIntent: intent.id, amount: 5000 });
  await postStripe(app, stripeEvent('refund.created', refund));
  assert.equal((await onlyPayment(app)).status, 'refunded');
  await postStripe(
    app,
    stripeEvent('refund.failed', { ...refund, status: 'failed', failure_reason: 'lost_or_stolen_card' }),
  );
  const { payment, refunds } = await assertInvariant(app);
  assert.deepEqual([payment.status, payment.amount_refunded], ['succeeded', 0]);
  assert.deepEqual(
    refunds.map((r) => [r.provider_reference, r.status]),
    [[refund.id, 'failed']],
  );
  assert.deepEqual(await topicData(app, 'payment.refund_failed'), [payment]);
});

test('Stripe refund reports in every order (created succeeded, updated canceled, refund.failed) end in the same state', async (t) => {
  const orders = [
    [0, 1, 2],
    [0, 2, 1],
    [1, 0, 2],
    [1, 2, 0],
    [2, 0, 1],
    [2, 1, 0],
  ];
  const finals = [];
  for (const order of orders) {
    const app = await buildTestApp(t, { env: PROVIDER_ENV });
    const intent = stripePaymentIntent({ amount: 5000 });
    await postStripe(app, stripeEvent('payment_intent.succeeded', intent));
    const kept = stripeRefund({ paymentIntent: intent.id, amount: 1000 });
    await postStripe(app, stripeEvent('refund.created', kept));
    const refund = stripeRefund({ paymentIntent: intent.id, amount: 1500 });
    const events = [
      stripeEvent('refund.created', refund),
      stripeEvent('refund.updated', { ...refund, status: 'canceled' }),
      stripeEvent('refund.failed', { ...refund, status: 'failed' }),
    ];
    for (const i of order) assert.equal((await postStripe(app, events[i]!)).status, 200);
    const { payment, refunds } = await assertInvariant(app);
    finals.push({
      payment: [payment.status, payment.amount_refunded],
      refunds: refunds
        .map((r) => [r.provider_reference === refund.id ? 'reversed' : 'kept', r.amount, r.status])
        .sort(),
      inbox: (await inbox(app)).map((row) => row.status),
    });
  }
  assert.deepEqual(finals[0], {
    payment: ['partially_refunded', 1000],
    refunds: [
      ['kept', 1000, 'succeeded'],
      ['reversed', 1500, 'failed'],
    ],
    inbox: ['processed', 'processed', 'processed', 'processed', 'processed'],
  });
  for (const final of finals) assert.deepEqual(final, finals[0]);
});

test('a refund failure before the success report, and before its payment: held, then the refund is failed and never counts', async (t) => {
  async function run(failureFirst: boolean) {
    const app = await buildTestApp(t, { env: PROVIDER_ENV });
    const charge = paystackCharge({ amount: 10000, email: 'reversal@example.com' });
    const options = { transactionReference: charge.data.reference, amount: '4000', refundReference: 'RF_order' };
    const failure = paystackRefund({ ...options, failed: true });
    const success = paystackRefund(options);
    const steps = failureFirst ? [failure, charge, success] : [charge, success, failure];
    for (const step of steps) await postPaystack(app, step);
    if (failureFirst) assert.deepEqual(await topicData(app, 'payment.refund_failed'), []);
    const { payment, refunds } = await assertInvariant(app);
    return {
      payment: [payment.status, payment.amount_refunded],
      refunds: refunds.map((r) => [r.provider_reference, r.amount, r.status]),
      inbox: (await inbox(app)).map((row) => row.status),
    };
  }
  const failureFirst = await run(true);
  assert.deepEqual(failureFirst, {
    payment: ['succeeded', 0],
    refunds: [['RF_order', 4000, 'failed']],
    inbox: ['processed', 'processed', 'processed'],
  });
  assert.deepEqual(await run(false), failureFirst);
});
