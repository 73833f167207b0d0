import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { appWithFakeProviders, type FakeProviders } from '../../test/helpers/provider-apps.ts';
import { type TestApp } from '../../test/helpers/app.ts';
import { STRIPE_API_KEY } from '../../test/helpers/fake-stripe.ts';
import {
  PAYSTACK_SECRET,
  paystackCharge,
  postPaystack,
  postStripe,
  stripeEvent,
  stripePaymentIntent,
} from '../../test/helpers/provider-events.ts';
import { resolveUnknownRefunds } from '../worker/refunds.jobs.ts';

/** A succeeded Paystack payment of `amount` NGN, known to the fake too. Returns the API's payment. */
async function paystackPayment(app: TestApp & FakeProviders, amount = 5000) {
  const charge = paystackCharge({ amount });
  assert.equal((await postPaystack(app, charge)).status, 200);
  app.paystack.paid(charge.data.reference, amount);
  return paymentByReference(app, charge.data.reference);
}

/** A succeeded Stripe payment (PaymentIntent) of `amount` USD, known to the fake too. */
async function stripePayment(app: TestApp & FakeProviders, amount = 2000) {
  const intent = stripePaymentIntent({ amount });
  assert.equal((await postStripe(app, stripeEvent('payment_intent.succeeded', intent))).status, 200);
  app.stripe.paid(intent.id, amount);
  return paymentByReference(app, intent.id);
}

async function paymentByReference(app: TestApp, reference: string) {
  const list = await app.request('GET', '/api/payments?limit=100');
  const payment = list.body.data.find((p: { provider_reference: string }) => p.provider_reference === reference);
  assert.ok(payment, `payment ${reference} recorded`);
  return payment;
}

function refund(app: TestApp, paymentId: string, body?: Record<string, unknown>, headers?: Record<string, string>) {
  return app.request('POST', `/api/payments/${paymentId}/refund`, { body, headers });
}

async function refundsOf(app: TestApp, paymentId: string) {
  return (await app.request('GET', `/api/refunds?payment_id=${paymentId}&limit=100`)).body.data;
}

function stripeNow(app: TestApp): number {
  return Math.floor(app.clock.now().getTime() / 1000);
}

test('Paystack: POST /refund with the transaction and amount → 202 pending; refund.processed settles that refund (no second row)', async (t) => {
  const app = await appWithFakeProviders(t);
  const payment = await paystackPayment(app, 5000);

  const res = await refund(app, payment.id, { amount: 2000, reason: 'customer changed their mind' });
  assert.equal(res.status, 202, res.text);
  assert.equal(res.body.status, 'pending');
  assert.equal(res.body.amount, 2000);
  assert.equal(res.body.currency, 'NGN');
  assert.equal(res.body.reason, 'customer changed their mind');
  assert.equal(res.body.refunded_at, null);
  assert.match(res.body.id, /^re_/);

  const [call, ...more] = app.paystack.refundCalls;
  assert.equal(more.length, 0);
  assert.equal(call!.headers.authorization, `Bearer ${PAYSTACK_SECRET}`);
  assert.match(String(call!.headers['content-type']), /^application\/json/);
  assert.deepEqual(call!.body, {
    transaction: payment.provider_reference,
    amount: 2000,
    merchant_note: `customer changed their mind [${res.body.id}]`,
  });
  const [atPaystack] = [...app.paystack.refunds.values()];
  assert.equal(res.body.provider_reference, String(atPaystack!.id), "the refund is known by Paystack's id");

  let after = (await app.request('GET', `/api/payments/${payment.id}`)).body;
  assert.equal(after.amount_refunded, 0, 'a pending refund is not refunded money yet');
  assert.equal(after.status, 'succeeded');

  assert.equal(await app.paystack.sendRefundEvent(app.baseUrl, atPaystack!.id, 'processed'), 200);
  const refunds = await refundsOf(app, payment.id);
  assert.equal(refunds.length, 1, 'the event settled the pending refund instead of adding one');
  assert.equal(refunds[0].id, res.body.id);
  assert.equal(refunds[0].status, 'succeeded');
  assert.notEqual(refunds[0].refunded_at, null);
  after = (await app.request('GET', `/api/payments/${payment.id}`)).body;
  assert.equal(after.amount_refunded, 2000);
  assert.equal(after.status, 'partially_refunded');
  const events = (await app.request('GET', '/api/events?topic=payment.refunded')).body.data;
  assert.equal(events.length, 1);
  assert.equal(events[0].data.amount_refunded, 2000);
});

test('Stripe: POST /v1/refunds with payment_intent, amount, reason and our Idempotency-Key → 202 pending; refund.updated settles it to refunded', async (t) => {
  const app = await appWithFakeProviders(t);
  const payment = await stripePayment(app, 2000);

  const res = await refund(app, payment.id, { reason: 'Requested by customer' });
  assert.equal(res.status, 202, res.text);
  assert.equal(res.body.status, 'pending');
  assert.equal(res.body.amount, 2000, 'no amount: all that may still be refunded');

  const [call, ...more] = app.stripe.refundCalls;
  assert.equal(more.length, 0);
  assert.equal(call!.headers.authorization, `Bearer ${STRIPE_API_KEY}`);
  assert.equal(call!.headers['idempotency-key'], res.body.id, 'our refund id is the Idempotency-Key');
  assert.deepEqual(call!.body, {
    payment_intent: payment.provider_reference,
    amount: '2000',
    reason: 'requested_by_customer',
    metadata: { refund_id: res.body.id, payment_id: payment.id },
  });
  const stripeId = [...app.stripe.refunds.keys()][0]!;
  assert.equal(res.body.provider_reference, stripeId);

  assert.equal(await app.stripe.sendRefundEvent(app.baseUrl, stripeId, 'succeeded', stripeNow(app)), 200);
  const refunds = await refundsOf(app, payment.id);
  assert.deepEqual(
    refunds.map((r: { id: string; status: string }) => [r.id, r.status]),
    [[res.body.id, 'succeeded']],
  );
  const after = (await app.request('GET', `/api/payments/${payment.id}`)).body;
  assert.equal(after.amount_refunded, 2000);
  assert.equal(after.status, 'refunded');
});

test('Stripe: a reason outside its enum travels in the metadata', async (t) => {
  const app = await appWithFakeProviders(t);
  const payment = await stripePayment(app, 2000);
  const res = await refund(app, payment.id, { amount: 500, reason: 'damaged in transit' });
  assert.equal(res.status, 202, res.text);
  const [call] = app.stripe.refundCalls;
  assert.equal(call!.body.reason, undefined);
  assert.deepEqual(call!.body.metadata, {
    refund_id: res.body.id,
    payment_id: payment.id,
    reason: 'damaged in transit',
  });
});

test('pending refunds count: a request beyond amount − succeeded − pending is 422 and changes nothing; nothing left is 409; a failed refund frees its amount', async (t) => {
  const app = await appWithFakeProviders(t);
  const payment = await stripePayment(app, 2000);
  assert.equal((await refund(app, payment.id, { amount: 1500 })).status, 202);

  const beyond = await refund(app, payment.id, { amount: 501 });
  assert.equal(beyond.status, 422, beyond.text);
  assert.equal(beyond.body.code, 'invalid_state');
  assert.equal(
    beyond.body.message,
    `amount 501 exceeds the 500 that may still be refunded on payment ${payment.id} (2000 paid, 0 refunded, 1500 pending)`,
  );
  assert.deepEqual(beyond.body.details, { refundable: 500 });
  assert.equal(app.stripe.refundCalls.length, 1, 'the provider was not asked');
  assert.equal((await refundsOf(app, payment.id)).length, 1);

  assert.equal((await refund(app, payment.id, { amount: 500 })).status, 202);
  const none = await refund(app, payment.id, { amount: 1 });
  assert.equal(none.status, 409, none.text);
  assert.equal(none.body.code, 'validation_error');
  assert.match(
    none.body.message,
    /cannot be refunded in its current state \(nothing remains: 2000 paid, 0 refunded, 2000 pending\)/,
  );

  // The 1500 refund fails at Stripe: its amount is free again, and the failure is told.
  const first = [...app.stripe.refunds.values()].find((r) => r.amount === 1500)!;
  assert.equal(await app.stripe.sendRefundEvent(app.baseUrl, String(first.id), 'failed', stripeNow(app)), 200);
  const statuses = (await refundsOf(app, payment.id)).map((r: { amount: number; status: string }) => [
    r.amount,
    r.status,
  ]);
  assert.deepEqual(statuses.sort(), [
    [1500, 'failed'],
    [500, 'pending'],
  ]);
  assert.equal((await app.request('GET', '/api/events?topic=payment.refund_failed')).body.data.length, 1);
  const again = await refund(app, payment.id, { amount: 1500 });
  assert.equal(again.status, 202, again.text);
});

test('bad requests: unknown payment 404; failed and manual payments, a provider without a key; amounts that are not positive integers 400', async (t) => {
  const app = await appWithFakeProviders(t, { STRIPE_API_KEY: '' });
  assert.equal((await refund(app, 'pay_01JD3Q7Z8X9Y0A1B2C3D4E5F6G', {})).status, 404);
  assert.equal((await refund(app, 'nonsense', {})).status, 404);

  const payment = await paystackPayment(app, 5000);
  for (const amount of [0, -5, 1.5, '100']) {
    const res = await refund(app, payment.id, { amount });
    assert.equal(res.status, 400, `${JSON.stringify(amount)}: ${res.text}`);
    assert.equal(res.body.code, 'validation_error');
    assert.equal(res.body.errors[0].name, 'amount');
  }
  assert.equal((await refund(app, payment.id, { amount: 10, extra: 1 })).status, 400);
  assert.equal((await refund(app, payment.id, { reason: '' })).status, 400);

  // Stripe has no API key here: it still receives events, it cannot refund.
  const intent = stripePaymentIntent({ amount: 2000 });
  await postStripe(app, stripeEvent('payment_intent.succeeded', intent));
  const stripePaid = await paymentByReference(app, intent.id);
  const noKey = await refund(app, stripePaid.id, {});
  assert.equal(noKey.status, 422);
  assert.deepEqual(noKey.body, {
    code: 'invalid_state',
    message: 'Stripe cannot refund payments: STRIPE_API_KEY is not set',
    details: null,
  });

  const failedIntent = stripePaymentIntent({ amount: 2000, status: 'requires_payment_method', error: 'Declined' });
  await postStripe(app, stripeEvent('payment_intent.payment_failed', failedIntent));
  const failed = await paymentByReference(app, failedIntent.id);
  const notPaid = await refund(app, failed.id, {});
  assert.equal(notPaid.status, 409);
  assert.equal(notPaid.body.message, `payment ${failed.id} cannot be refunded in its current state (failed)`);

  // A payment recorded out of band (POST /api/invoices/{id}/pay) has no provider to ask.
  await app.deps.db.updateTable('payments').set({ provider: 'manual' }).where('id', '=', payment.id).execute();
  const manual = await refund(app, payment.id, {});
  assert.equal(manual.status, 422);
  assert.match(manual.body.message, /recorded out of band \(provider manual\)/);
  assert.equal(app.paystack.refundCalls.length, 0);
  assert.equal((await app.request('GET', '/api/refunds')).body.data.length, 0);
});

test('the provider refuses the request: 422 invalid_state with its reason; the refund is kept failed and frees its amount', async (t) => {
  const app = await appWithFakeProviders(t);
  const payment = await paystackPayment(app, 5000);
  app.paystack.queue({
    status: 400,
    body: {
      status: false,
      message: 'Transaction has been fully reversed',
      type: 'validation_error',
      code: 'invalid_params',
    },
  });
  const res = await refund(app, payment.id, { amount: 5000 });
  assert.equal(res.status, 422, res.text);
  assert.equal(res.body.message, 'Paystack refused to create the refund: Transaction has been fully reversed');
  assert.equal(res.body.details.provider_code, 'invalid_params');
  const [kept] = await refundsOf(app, payment.id);
  assert.equal(kept.id, res.body.details.refund_id);
  assert.equal(kept.status, 'failed');
  assert.equal(kept.failure_reason, res.body.message);
  assert.equal((await refund(app, payment.id, { amount: 5000 })).status, 202, 'its amount is free again');
});

test('Stripe: no usable answer → 503 and the refund stays pending; the retry with the same Idempotency-Key finds it by its refund_id (GET /v1/refunds) and sends nothing: one refund at Stripe', async (t) => {
  const app = await appWithFakeProviders(t, { PROVIDER_TIMEOUT: '300ms' });
  const payment = await stripePayment(app, 2000);
  app.stripe.queue('lost'); // Stripe refunds, the answer never arrives
  const headers = { 'idempotency-key': 'refund-order-42' };
  const first = await refund(app, payment.id, { amount: 800 }, headers);
  assert.equal(first.status, 503, first.text);
  assert.equal(first.body.code, 'internal_error');
  assert.equal(first.body.details.reason, 'timeout');
  const refundId = first.body.details.refund_id;
  assert.match(first.body.message, /stays pending: retry with the same Idempotency-Key/);
  const [pending] = await refundsOf(app, payment.id);
  assert.deepEqual([pending.id, pending.status, pending.provider_reference], [refundId, 'pending', refundId]);

  const retry = await refund(app, payment.id, { amount: 800 }, headers);
  assert.equal(retry.status, 202, retry.text);
  assert.equal(retry.body.id, refundId, 'the same refund, resumed');
  assert.deepEqual(
    app.stripe.refundCalls.map((c) => c.headers['idempotency-key']),
    [refundId],
  );
  assert.deepEqual(
    app.stripe.refundListCalls.map((c) => new URL(c.path, app.stripe.url).searchParams.get('payment_intent')),
    [payment.provider_reference],
  );
  assert.equal(retry.body.provider_reference, [...app.stripe.refunds.keys()][0]);
  assert.equal(app.stripe.refunds.size, 1, 'Stripe refunded once');
  assert.equal((await refundsOf(app, payment.id)).length, 1);

  // A replay of the completed request is the stored answer; nothing is called again.
  const replay = await refund(app, payment.id, { amount: 800 }, headers);
  assert.equal(replay.status, 202);
  assert.equal(replay.headers.get('idempotent-replayed'), 'true');
  assert.equal(app.stripe.calls.length, 2);
});

test('Stripe: the refund event arriving before any answer settles the pending refund by the refund_id in its metadata', async (t) => {
  const app = await appWithFakeProviders(t, { PROVIDER_TIMEOUT: '300ms' });
  const payment = await stripePayment(app, 2000);
  app.stripe.queue('lost');
  const first = await refund(app, payment.id, { amount: 2000 });
  assert.equal(first.status, 503);
  const stripeId = [...app.stripe.refunds.keys()][0]!;
  assert.equal(await app.stripe.sendRefundEvent(app.baseUrl, stripeId, 'succeeded', stripeNow(app)), 200);
  const refunds = await refundsOf(app, payment.id);
  assert.deepEqual(
    refunds.map((r: { id: string; status: string; provider_reference: string }) => [
      r.id,
      r.status,
      r.provider_reference,
    ]),
    [[first.body.details.refund_id, 'succeeded', stripeId]],
  );
  assert.equal((await app.request('GET', `/api/payments/${payment.id}`)).body.status, 'refunded');
});

test('Paystack: no usable answer → 503; the retry looks the refund up (GET /refund) and does not send it again', async (t) => {
  const app = await appWithFakeProviders(t, { PROVIDER_TIMEOUT: '300ms' });
  const payment = await paystackPayment(app, 5000);
  app.paystack.queue('lost'); // Paystack queues the refund, the answer never arrives
  const headers = { 'idempotency-key': 'refund-order-43' };
  const first = await refund(app, payment.id, { amount: 3000 }, headers);
  assert.equal(first.status, 503, first.text);
  assert.equal(app.paystack.refunds.size, 1);

  const retry = await refund(app, payment.id, { amount: 3000 }, headers);
  assert.equal(retry.status, 202, retry.text);
  assert.equal(retry.body.id, first.body.details.refund_id);
  assert.equal(app.paystack.refundCalls.length, 1, 'POST /refund was not sent again');
  assert.equal(app.paystack.refunds.size, 1, 'Paystack refunded once');
  const lookup = app.paystack.calls.filter((c) => c.method === 'GET' && c.path.startsWith('/refund?'));
  assert.equal(lookup.length, 1);
  const [atPaystack] = [...app.paystack.refunds.values()];
  assert.equal(retry.body.provider_reference, String(atPaystack!.id));

  // Nothing at Paystack (the request never arrived): the retry sends it, once.
  const other = await paystackPayment(app, 5000);
  app.paystack.queue('hang');
  const lost = await refund(app, other.id, { amount: 1000 }, { 'idempotency-key': 'refund-order-44' });
  assert.equal(lost.status, 503);
  const resent = await refund(app, other.id, { amount: 1000 }, { 'idempotency-key': 'refund-order-44' });
  assert.equal(resent.status, 202, resent.text);
  assert.equal(resent.body.id, lost.body.details.refund_id);
  assert.equal(app.paystack.refunds.size, 2);

  await app.paystack.sendRefundEvent(app.baseUrl, atPaystack!.id, 'processed');
  const settled = await refundsOf(app, payment.id);
  assert.deepEqual(
    settled.map((r: { id: string; status: string }) => [r.id, r.status]),
    [[first.body.details.refund_id, 'succeeded']],
  );
});

test('provider keys never appear in logs or responses of refunds', async (t) => {
  const chunks: string[] = [];
  const logStream = new Writable({
    write(chunk, _encoding, done) {
      chunks.push(String(chunk));
      done();
    },
  });
  const app = await appWithFakeProviders(t, { PROVIDER_TIMEOUT: '300ms' }, { logStream });
  const paystackPaid = await paystackPayment(app, 5000);
  const stripePaid = await stripePayment(app, 2000);
  const bodies: string[] = [];
  const send = async (id: string, body: Record<string, unknown>) => bodies.push((await refund(app, id, body)).text);

  app.paystack.queue({ status: 400, body: { status: false, message: `Invalid key ${PAYSTACK_SECRET} here` } });
  await send(paystackPaid.id, { amount: 100 });
  app.stripe.queue({
    status: 400,
    body: { error: { type: 'invalid_request_error', message: `No such key: ${STRIPE_API_KEY}` } },
  });
  await send(stripePaid.id, { amount: 100 });
  app.paystack.queue('hang');
  await send(paystackPaid.id, { amount: 100 });
  app.stripe.queue({ status: 503, body: { error: { type: 'api_error', message: `down ${STRIPE_API_KEY}` } } });
  await send(stripePaid.id, { amount: 100 });
  await send(paystackPaid.id, { amount: 100 });
  await app.app.close();

  assert.match(bodies[0]!, /Invalid key \[redacted\] here/);
  assert.match(bodies[1]!, /No such key: \[redacted\]/);
  const logs = chunks.join('');
  assert.match(logs, /did not answer within 300 ms/, 'the 503 was logged');
  const stored = JSON.stringify(await app.deps.db.selectFrom('refunds').selectAll().execute());
  for (const secret of [PAYSTACK_SECRET, STRIPE_API_KEY]) {
    for (const [where, text] of [
      ['logs', logs],
      ['responses', bodies.join('\n')],
      ['stored refunds', stored],
    ] as const) {
      assert.ok(!text.includes(secret), `${where} contain ${secret.slice(0, 12)}…`);
    }
  }
});

test('concurrent refund requests never promise more than was paid (PostgreSQL: the payment lock serializes them)', async (t) => {
  const app = await appWithFakeProviders(t);
  const payment = await stripePayment(app, 2000);
  const answers = await Promise.all(Array.from({ length: 8 }, () => refund(app, payment.id, { amount: 700 })));
  const accepted = answers.filter((a) => a.status === 202);
  assert.equal(accepted.length, 2, answers.map((a) => a.status).join(','));
  assert.ok(
    answers.every((a) => a.status === 202 || (a.status === 422 && a.body.code === 'invalid_state')),
    answers.map((a) => a.text).join('\n'),
  );
  assert.equal(app.stripe.refundCalls.length, 2, 'only accepted requests reached Stripe');
  const refunds = await refundsOf(app, payment.id);
  assert.equal(
    refunds.reduce((sum: number, r: { amount: number }) => sum + r.amount, 0),
    1400,
  );
  // And with the rest asked for at once: exactly one of them gets the 600 left.
  const rest = await Promise.all(Array.from({ length: 4 }, () => refund(app, payment.id, {})));
  assert.deepEqual(rest.map((a) => a.status).sort(), [202, 409, 409, 409]);
  assert.equal(rest.find((a) => a.status === 202)!.body.amount, 600);
});

test('the worker resolves a refund left without an answer once resume_at comes, under a lease: Paystack looked up, never sent twice', async (t) => {
  const app = await appWithFakeProviders(t, { PROVIDER_TIMEOUT: '300ms' });
  const payment = await paystackPayment(app, 5000);
  app.paystack.queue('lost');
  const first = await refund(app, payment.id, { amount: 1200 });
  assert.equal(first.status, 503);
  const refundId = first.body.details.refund_id;

  assert.equal(await resolveUnknownRefunds.run(app.deps), 0, 'not due yet: a retry of the request may come first');
  app.clock.advance(60_000);
  assert.equal(await resolveUnknownRefunds.run(app.deps), 1);
  assert.equal(app.paystack.refundCalls.length, 1, 'found by the lookup, not sent again');
  const [atPaystack] = [...app.paystack.refunds.values()];
  let [row] = await refundsOf(app, payment.id);
  assert.deepEqual([row.id, row.status, row.provider_reference], [refundId, 'pending', String(atPaystack!.id)]);
  app.clock.advance(600_000);
  assert.equal(await resolveUnknownRefunds.run(app.deps), 0, 'answered: nothing left to resolve');

  // Still no answer: due again a minute later; a refusal ends it as failed.
  const other = await paystackPayment(app, 5000);
  app.paystack.queue('hang');
  const lost = await refund(app, other.id, { amount: 700 });
  assert.equal(lost.status, 503);
  app.clock.advance(60_000);
  app.paystack.queue('hang');
  assert.equal(await resolveUnknownRefunds.run(app.deps), 1);
  assert.equal(await resolveUnknownRefunds.run(app.deps), 0, 'due again in a minute, not at once');
  app.clock.advance(60_000);
  // A refused lookup says nothing about the refund: still unknown, nothing sent.
  app.paystack.queue({ status: 400, body: { status: false, message: 'Invalid date', code: 'invalid_params' } });
  assert.equal(await resolveUnknownRefunds.run(app.deps), 1);
  [row] = await refundsOf(app, other.id);
  assert.equal(row.status, 'pending');
  app.clock.advance(60_000);
  app.paystack.queue(
    {
      status: 200,
      body: {
        status: true,
        message: 'Refunds retrieved',
        data: [],
        meta: { total: 0, skipped: 0, perPage: '100', page: 1, pageCount: 1, failedRefundCount: 0 },
      },
    },
    { status: 400, body: { status: false, message: 'Refund not allowed', code: 'invalid_params' } },
  );
  assert.equal(await resolveUnknownRefunds.run(app.deps), 1);
  [row] = await refundsOf(app, other.id);
  assert.deepEqual(
    [row.status, row.failure_reason],
    ['failed', 'Paystack refused to create the refund: Refund not allowed'],
  );
  assert.equal(app.paystack.refunds.size, 1, 'only the first refund reached Paystack');
});

test('a retry while another caller holds the lease does not ask the provider: it answers the pending refund as it stands', async (t) => {
  const app = await appWithFakeProviders(t, { PROVIDER_TIMEOUT: '300ms' });
  const payment = await stripePayment(app, 2000);
  app.stripe.queue('hang');
  const headers = { 'idempotency-key': 'refund-order-77' };
  const first = await refund(app, payment.id, { amount: 900 }, headers);
  assert.equal(first.status, 503);
  app.clock.advance(60_000);
  // The worker claims it (as if its call were in flight) …
  const { claimDueRefundRequests } = await import('../modules/payments/payments.refund-requests.ts');
  const claimed = await claimDueRefundRequests(app.deps.db, app.clock, 10, 120_000);
  assert.equal(claimed.length, 1);
  // … so the client's retry gets the refund as it is, and Stripe is not asked meanwhile.
  const retry = await refund(app, payment.id, { amount: 900 }, headers);
  assert.equal(retry.status, 202, retry.text);
  assert.deepEqual([retry.body.id, retry.body.status], [first.body.details.refund_id, 'pending']);
  assert.equal(app.stripe.refundCalls.length, 1);
  // That 202 is the stored answer now; once the lease has passed, the worker asks (same key).
  app.clock.advance(120_000);
  const later = await refund(app, payment.id, { amount: 900 }, headers);
  assert.equal(later.headers.get('idempotent-replayed'), 'true');
  assert.equal(await resolveUnknownRefunds.run(app.deps), 1);
  assert.deepEqual(
    app.stripe.refundCalls.map((c) => c.headers['idempotency-key']),
    [first.body.details.refund_id, first.body.details.refund_id],
  );
  assert.equal(app.stripe.refunds.size, 1);
});
