// Resuming an API refund whose provider answer was lost (SPEC §10 "Refunds from the API"):
// a look-up that cannot prove absence sends nothing; a Paystack refund is ours only when its
// merchant_note ends with our marker; refunds of test clock customers live on the clock's
// time; a merge counts pending refunds. Checked against the fake providers' ledgers.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { appWithFakeProviders, type FakeProviders } from '../../test/helpers/provider-apps.ts';
import { type TestApp } from '../../test/helpers/app.ts';
import { createSubscription } from '../../test/helpers/factories.ts';
import {
  nextSeq,
  paystackCharge,
  postPaystack,
  postStripe,
  stripeEvent,
  stripeInvoice,
  stripeInvoicePayment,
  stripePaymentIntent,
} from '../../test/helpers/provider-events.ts';
import { CLOCK_AWARE_JOBS } from '../worker/jobs.ts';
import { Worker } from '../worker/runner.ts';
import { advanceTestClocks } from '../worker/test-clocks.jobs.ts';
import { resolveUnknownRefunds } from '../worker/refunds.jobs.ts';

type App = TestApp & FakeProviders;

/** A succeeded Paystack payment of `amount` NGN (of `customerId` when given), known to the fake too. */
async function paystackPayment(app: App, amount = 5000, customerId?: string) {
  const charge = paystackCharge({ amount, ...(customerId ? { metadata: { customer_id: customerId } } : {}) });
  assert.equal((await postPaystack(app, charge)).status, 200);
  app.paystack.paid(charge.data.reference, amount);
  const list = await app.request('GET', '/api/payments?limit=100');
  const payment = list.body.data.find(
    (p: { provider_reference: string }) => p.provider_reference === charge.data.reference,
  );
  assert.ok(payment, 'payment recorded');
  return payment as { id: string; provider_reference: string; customer_id: string | null };
}

function refund(app: App, paymentId: string, body: Record<string, unknown>, key?: string) {
  return app.request('POST', `/api/payments/${paymentId}/refund`, {
    body,
    headers: key ? { 'idempotency-key': key } : undefined,
  });
}

async function refundRow(app: App, id: string) {
  return app.deps.db.selectFrom('refunds').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

const lookups = (app: App) => app.paystack.calls.filter((c) => c.method === 'GET' && c.path.startsWith('/refund?'));

const emptyPage = (total: number, pageCount: number) => ({
  status: 200,
  body: {
    status: true,
    message: 'Refunds retrieved',
    data: [],
    meta: { total, skipped: 0, perPage: '100', page: 1, pageCount, failedRefundCount: 0 },
  },
});

test('Paystack: a retry after a lost answer finds its refund behind 1,200 others (every page read): never sent twice, never failed', async (t) => {
  const app = await appWithFakeProviders(t, { PROVIDER_TIMEOUT: '1s' });
  const small = await paystackPayment(app, 5000);
  const large = await paystackPayment(app, 5000);

  // Paystack makes each refund and the answer is lost; then the account's other refunds pile up.
  app.paystack.inject('lose', { method: 'POST', path: '/refund' }, 2);
  const first = await refund(app, small.id, { amount: 1000 }, 'refund-small');
  const second = await refund(app, large.id, { amount: 4000 }, 'refund-large');
  assert.deepEqual([first.status, second.status], [503, 503], first.text);
  app.paystack.seedRefunds(1200);

  const retry = await refund(app, small.id, { amount: 1000 }, 'refund-small');
  assert.equal(retry.status, 202, retry.text);
  const smallId = first.body.details.refund_id;
  const [atPaystack, ...twice] = app.paystack.ledger.refundsWithMarker(smallId);
  assert.equal(twice.length, 0, 'Paystack refunded once');
  assert.deepEqual([retry.body.id, retry.body.provider_reference], [smallId, atPaystack!.providerId]);
  assert.equal(lookups(app).length, 13, 'all 13 pages of 100 read: ours is the oldest, on the last');

  // The larger amount: sending it again would be refused (4000 > the 1000 left at Paystack).
  const retryLarge = await refund(app, large.id, { amount: 4000 }, 'refund-large');
  assert.equal(retryLarge.status, 202, retryLarge.text);
  const largeId = second.body.details.refund_id;
  assert.equal(app.paystack.ledger.refundsWithMarker(largeId).length, 1);
  const row = await refundRow(app, largeId);
  assert.deepEqual([row.status, row.failure_reason], ['pending', null]);
  assert.equal(row.provider_refund_id, app.paystack.ledger.refundsWithMarker(largeId)[0]!.providerId);
  assert.equal(app.paystack.refundCalls.length, 2, 'POST /refund was sent once per refund');
});

test('Paystack: a look-up that cannot prove absence sends nothing (a page fails, the count does not add up, too many pages); a proven absence sends once', async (t) => {
  const app = await appWithFakeProviders(t, { PROVIDER_TIMEOUT: '300ms' });
  const payment = await paystackPayment(app, 5000);
  app.paystack.inject('timeout', { method: 'POST', path: '/refund' }); // nothing reaches Paystack
  const key = 'refund-unproven';
  const first = await refund(app, payment.id, { amount: 2500 }, key);
  assert.equal(first.status, 503, first.text);
  const id = first.body.details.refund_id;
  app.paystack.seedRefunds(250);

  const unproven = async (why: string) => {
    const res = await refund(app, payment.id, { amount: 2500 }, key);
    assert.equal(res.status, 503, `${why}: ${res.text}`);
    assert.equal(res.body.details.reason, 'unavailable', why);
    const row = await refundRow(app, id);
    assert.deepEqual([row.status, row.provider_refund_id], ['pending', null], why);
    assert.equal(app.paystack.refundCalls.length, 1, `${why}: nothing sent again`);
  };
  app.paystack.inject('error', { method: 'GET', path: /[?&]page=2(&|$)/ });
  await unproven('page 2 answered 500');
  app.paystack.queue(emptyPage(7, 1));
  await unproven('one page of none while the total says 7');
  app.paystack.queue(emptyPage(10_100, 101));
  await unproven('101 pages');
  app.paystack.queue({ status: 400, body: { status: false, message: 'Invalid date', code: 'invalid_params' } });
  await unproven('the list refused');
  assert.equal(app.paystack.ledger.refundsWithMarker(id).length, 0);

  // Every page read and counted: Paystack has none, so it is sent now, once.
  const res = await refund(app, payment.id, { amount: 2500 }, key);
  assert.equal(res.status, 202, res.text);
  assert.equal(app.paystack.ledger.refundsWithMarker(id).length, 1);
  assert.equal(res.body.provider_reference, app.paystack.ledger.refundsWithMarker(id)[0]!.providerId);
});

test("Paystack: a refund whose reason names another refund's id is not taken for it; an answered pending refund is the one its event settles", async (t) => {
  const app = await appWithFakeProviders(t, { PROVIDER_TIMEOUT: '300ms' });
  const payment = await paystackPayment(app, 5000);
  app.paystack.inject('timeout', { method: 'POST', path: '/refund' });
  const a = await refund(app, payment.id, { amount: 1500 }, 'refund-a');
  assert.equal(a.status, 503);
  const aId = a.body.details.refund_id;
  const b = await refund(app, payment.id, { amount: 1500, reason: `duplicate of ${aId}` });
  assert.equal(b.status, 202, b.text);
  assert.equal(app.paystack.refundCalls[1]!.body.merchant_note, `duplicate of ${aId} [${b.body.id}]`);

  // B's event: B is the refund Paystack surely has (it answered for it), not the older A.
  const [atPaystackB] = app.paystack.ledger.refundsWithMarker(b.body.id);
  assert.equal(await app.paystack.sendRefundEvent(app.baseUrl, Number(atPaystackB!.providerId), 'processed'), 200);
  assert.equal((await refundRow(app, b.body.id)).status, 'succeeded');
  assert.equal((await refundRow(app, aId)).status, 'pending');

  // A's retry: B's note mentions A but does not end with A's marker, so A is sent now.
  const retry = await refund(app, payment.id, { amount: 1500 }, 'refund-a');
  assert.equal(retry.status, 202, retry.text);
  const [atPaystackA, ...more] = app.paystack.ledger.refundsWithMarker(aId);
  assert.ok(atPaystackA, 'A reached Paystack');
  assert.equal(more.length, 0);
  assert.equal(retry.body.provider_reference, atPaystackA.providerId);
  assert.equal(await app.paystack.sendRefundEvent(app.baseUrl, Number(atPaystackA.providerId), 'processed'), 200);
  assert.equal((await refundRow(app, aId)).status, 'succeeded');
  const after = (await app.request('GET', `/api/payments/${payment.id}`)).body;
  assert.equal(after.amount_refunded, 3000);
});

test("a test clock customer's refund is stamped with the clock's time and resumed by its advance, never by the real-time worker", async (t) => {
  const app = await appWithFakeProviders(t, { PROVIDER_TIMEOUT: '300ms', TEST_CLOCKS: 'true' });
  const frozen = '2025-06-01T00:00:00.000Z';
  const clock = (await app.request('POST', '/api/test-clocks', { body: { frozen_time: frozen } })).body;
  const customer = await app.request('POST', '/api/customers', {
    body: { email: 'clocked@example.com', test_clock: clock.id },
  });
  assert.equal(customer.status, 201, customer.text);
  const payment = await paystackPayment(app, 5000, customer.body.id);
  assert.equal(payment.customer_id, customer.body.id);

  app.paystack.inject('timeout', { method: 'POST', path: '/refund' });
  const first = await refund(app, payment.id, { amount: 1000 });
  assert.equal(first.status, 503, first.text);
  const row = await refundRow(app, first.body.details.refund_id);
  assert.equal(row.created_at, frozen, "the clock's time, not the real one");
  assert.equal(row.test_clock_id, clock.id);
  assert.equal(row.resume_at, '2025-06-01T00:01:00.000Z', 'due a minute later on the clock');

  app.clock.advance(3_600_000);
  assert.equal(await resolveUnknownRefunds.run(app.deps), 0, 'the real-time worker leaves it to its clock');
  assert.equal(app.paystack.refundCalls.length, 1);

  const advance = await app.request('POST', `/api/test-clocks/${clock.id}/advance`, {
    body: { frozen_time: '2025-06-01T01:00:00.000Z' },
  });
  assert.equal(advance.status, 202, advance.text);
  const failLog = { error: (object: object) => assert.fail(`worker job failed: ${String(Object.values(object)[0])}`) };
  await new Worker(app.deps, [advanceTestClocks(CLOCK_AWARE_JOBS)], failLog).runOnce();
  const resumed = await refundRow(app, row.id);
  assert.equal(app.paystack.ledger.refundsWithMarker(row.id).length, 1, 'absence proven, sent once');
  assert.equal(resumed.provider_refund_id, app.paystack.ledger.refundsWithMarker(row.id)[0]!.providerId);
  assert.equal(resumed.updated_at, '2025-06-01T00:01:00.000Z', 'resumed at its due instant on the clock');
});

/** A succeeded Stripe payment (PaymentIntent) of `amount` USD, known to the fake too. */
async function stripePayment(app: App, amount: number) {
  const intent = stripePaymentIntent({ amount });
  assert.equal((await postStripe(app, stripeEvent('payment_intent.succeeded', intent))).status, 200);
  app.stripe.paid(intent.id, amount);
  const list = await app.request('GET', '/api/payments?limit=100');
  const payment = list.body.data.find((p: { provider_reference: string }) => p.provider_reference === intent.id);
  assert.ok(payment, 'payment recorded');
  return payment as { id: string; provider_reference: string };
}

const DAY_AND_AN_HOUR = 25 * 3_600_000;

test('Stripe: a refund whose answer was lost, resumed 25 hours later when Stripe has forgotten the Idempotency-Key, is found by its refund_id behind 150 others (every page): one refund at Stripe', async (t) => {
  const app = await appWithFakeProviders(t, { PROVIDER_TIMEOUT: '300ms' });
  const payment = await stripePayment(app, 100_000);
  app.stripe.inject('lose', { method: 'POST', path: '/v1/refunds' }); // Stripe refunds; the answer is lost
  const first = await refund(app, payment.id, { amount: 800 }, 'refund-late');
  assert.equal(first.status, 503, first.text);
  const id = first.body.details.refund_id;
  app.stripe.seedRefunds(payment.provider_reference, 150); // newer than ours: ours is on page 2

  app.clock.advance(DAY_AND_AN_HOUR);
  app.stripe.expireIdempotencyKeys();
  assert.equal(await resolveUnknownRefunds.run(app.deps), 1);

  const [atStripe, ...twice] = app.stripe.ledger.refundsWithMarker(id);
  assert.equal(twice.length, 0, 'Stripe refunded once');
  const row = await refundRow(app, id);
  assert.deepEqual([row.status, row.provider_refund_id], ['pending', atStripe!.providerId]);
  assert.equal(app.stripe.refundCalls.length, 1, 'POST /v1/refunds was not sent again');
  const pages = app.stripe.refundListCalls.map((c) => new URL(c.path, app.stripe.url).searchParams);
  assert.deepEqual(
    pages.map((q) => [q.get('payment_intent'), q.get('limit'), q.has('starting_after')]),
    [
      [payment.provider_reference, '100', false],
      [payment.provider_reference, '100', true],
    ],
  );
});

test('Stripe: a look-up that cannot prove absence sends nothing and leaves the refund pending; an idempotency_error is no refusal; a proven absence sends once', async (t) => {
  const app = await appWithFakeProviders(t, { PROVIDER_TIMEOUT: '300ms' });
  const payment = await stripePayment(app, 100_000);
  app.stripe.inject('timeout', { method: 'POST', path: '/v1/refunds' }); // nothing reaches Stripe
  const key = 'refund-unproven';
  const first = await refund(app, payment.id, { amount: 2500 }, key);
  assert.equal(first.status, 503, first.text);
  const id = first.body.details.refund_id;
  app.stripe.seedRefunds(payment.provider_reference, 150);

  const unknown = async (why: string, sent: number) => {
    const res = await refund(app, payment.id, { amount: 2500 }, key);
    assert.equal(res.status, 503, `${why}: ${res.text}`);
    assert.equal(res.body.details.reason, 'unavailable', why);
    const row = await refundRow(app, id);
    assert.deepEqual([row.status, row.provider_refund_id, row.failure_reason], ['pending', null, null], why);
    assert.equal(app.stripe.refundCalls.length, sent, `${why}: POST /v1/refunds calls`);
  };
  const list = { method: 'GET', path: '/v1/refunds*' };
  app.stripe.inject('error', list);
  await unknown('the list answered 500', 1);
  app.stripe.inject('error', { method: 'GET', path: /starting_after=/ });
  await unknown('page 2 answered 500', 1);
  app.stripe.inject(
    { status: 400, body: { error: { type: 'invalid_request_error', message: 'Invalid limit' } } },
    list,
  );
  await unknown('the list refused', 1);
  app.stripe.inject({ status: 200, body: { object: 'list', url: '/v1/refunds', has_more: true, data: [] } }, list);
  await unknown('more pages and no cursor', 1);
  app.stripe.inject({ status: 200, body: { object: 'list', url: '/v1/refunds' } }, list);
  await unknown('no data', 1);
  assert.equal(app.stripe.ledger.refundsWithMarker(id).length, 0);

  // Absence proven, sent, and Stripe answers idempotency_error: money may have moved.
  app.stripe.inject(
    {
      status: 400,
      body: {
        error: {
          type: 'idempotency_error',
          message: 'Keys for idempotent requests can only be used with the same parameters they were first used with.',
        },
      },
    },
    { method: 'POST', path: '/v1/refunds' },
  );
  await unknown('idempotency_error', 2);

  const res = await refund(app, payment.id, { amount: 2500 }, key);
  assert.equal(res.status, 202, res.text);
  const [atStripe, ...twice] = app.stripe.ledger.refundsWithMarker(id);
  assert.equal(twice.length, 0);
  assert.equal(res.body.provider_reference, atStripe!.providerId);
  assert.equal(app.stripe.refundCalls.at(-1)!.headers['idempotency-key'], id, 'sent with our Idempotency-Key');
});

test('a link that would merge two payments whose pending refunds exceed the merged amount is refused, nothing changed', async (t) => {
  const app = await appWithFakeProviders(t);
  const basil = { apiVersion: '2025-05-28.basil' };
  const subscription = await createSubscription(app, { plan: { currency: 'USD', amount: 2000 } });
  const intent = stripePaymentIntent({ amount: 2000, email: null });
  const invoice = stripeInvoice({
    style: 'basil',
    subscription: `sub_${nextSeq()}`,
    amount: 2000,
    subscriptionMetadata: { subscription_id: subscription.id },
  });
  await postStripe(app, stripeEvent('invoice.paid', invoice, basil));
  await postStripe(app, stripeEvent('payment_intent.succeeded', intent, basil));
  const payments = (await app.request('GET', '/api/payments?limit=100')).body.data as {
    id: string;
    provider_reference: string;
  }[];
  assert.equal(payments.length, 2, 'one payment per reference until they are linked');
  // Each payment has a pending API refund; together they promise back more than was paid.
  app.stripe.paid(intent.id, 2000);
  app.stripe.paid(invoice.id, 2000);
  for (const [reference, amount] of [
    [intent.id, 1500],
    [invoice.id, 1000],
  ] as const) {
    const payment = payments.find((p) => p.provider_reference === reference)!;
    assert.equal((await refund(app, payment.id, { amount })).status, 202);
  }

  const link = stripeInvoicePayment({ invoice: invoice.id, paymentIntent: intent.id, amount: 2000 });
  await postStripe(app, stripeEvent('invoice_payment.paid', link, basil));
  const after = (await app.request('GET', '/api/payments?limit=100')).body.data;
  assert.equal(after.length, 2, 'not merged');
  const refused = await app.deps.db
    .selectFrom('provider_events')
    .select(['status', 'error'])
    .where('event_type', '=', 'invoice_payment.paid')
    .executeTakeFirstOrThrow();
  assert.equal(refused.status, 'failed');
  assert.match(refused.error ?? '', /refunds of 0 \(and 2500 pending\) on payments .* exceed the merged amount 2000/);
});
