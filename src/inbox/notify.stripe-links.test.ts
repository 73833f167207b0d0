// Stripe API ≥ 2025-03-31 reports one subscription payment as an invoice (`invoice.*`, keyed
// by the invoice) and as a PaymentIntent (`payment_intent.*`); `invoice_payment.paid` links
// them (SPEC §5). Whatever the order, one payment keyed by the PaymentIntent, one effect on
// the subscription.
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
  stripeInvoicePayment,
  stripePaymentIntent,
  stripeRefund,
} from '../../test/helpers/provider-events.ts';

const BASIL = '2025-05-28.basil';

async function allPayments(app: TestApp) {
  return (await app.request('GET', '/api/payments?limit=100&sort_by=created_at&sort_order=asc')).body;
}

async function topics(app: TestApp, topic: string) {
  return (await app.request('GET', `/api/events?topic=${topic}&limit=100`)).body.data as { data: any }[];
}

async function inbox(app: TestApp) {
  return app.deps.db
    .selectFrom('provider_events')
    .select(['event_type', 'status', 'error'])
    .orderBy('received_at')
    .orderBy('id')
    .execute();
}

/** The three events Stripe sends for one paid renewal of a subscription (basil). */
async function paidRenewal(app: TestApp, amount = 2000) {
  const subscription = await createSubscription(app, { plan: { currency: 'USD', amount } });
  // A subscription invoice's PaymentIntent carries neither metadata nor receipt email.
  const intent = stripePaymentIntent({ amount, email: null });
  const invoice = stripeInvoice({
    style: 'basil',
    subscription: `sub_${nextSeq()}`,
    amount,
    subscriptionMetadata: { subscription_id: subscription.id },
  });
  const events = {
    invoice: stripeEvent('invoice.paid', invoice, { apiVersion: BASIL }),
    intent: stripeEvent('payment_intent.succeeded', intent, { apiVersion: BASIL }),
    link: stripeEvent(
      'invoice_payment.paid',
      stripeInvoicePayment({ invoice: invoice.id, paymentIntent: intent.id, amount }),
      { apiVersion: BASIL },
    ),
  };
  return { subscription, intent, invoice, events };
}

const ORDERS = [
  ['invoice', 'intent', 'link'],
  ['invoice', 'link', 'intent'],
  ['intent', 'invoice', 'link'],
  ['intent', 'link', 'invoice'],
  ['link', 'invoice', 'intent'],
  ['link', 'intent', 'invoice'],
] as const;

test('invoice.paid, payment_intent.succeeded and invoice_payment.paid in any order: one payment keyed by the PaymentIntent, one period', async (t) => {
  const ends = [];
  for (const order of ORDERS) {
    const app = await buildTestApp(t, { env: PROVIDER_ENV });
    const { subscription, intent, events } = await paidRenewal(app);
    for (const name of order) assert.equal((await postStripe(app, events[name])).status, 200);

    const list = await allPayments(app);
    assert.equal(list.meta.total, 1, `${order}: ${JSON.stringify(list.data)}`);
    const [payment] = list.data;
    assert.equal(payment.provider_reference, intent.id, order.join());
    const after = (await app.request('GET', `/api/subscriptions/${subscription.id}`)).body;
    // Activated once: one period, not two.
    assert.equal(after.current_period_end, '2026-02-15T10:00:00.000Z', order.join());
    const moves =
      (await topics(app, 'subscription.updated')).length + (await topics(app, 'subscription.renewed')).length;
    assert.equal(moves, 1, order.join());
    assert.deepEqual(
      (await inbox(app)).map((row) => row.status),
      ['processed', 'processed', 'processed'],
    );
    ends.push({
      payment: {
        byIntent: payment.provider_reference === intent.id,
        ofCustomer: payment.customer_id === subscription.customer_id,
        ofSubscription: payment.subscription_id === subscription.id,
        amount: payment.amount,
        currency: payment.currency,
        status: payment.status,
        paid_at: payment.paid_at,
      },
      subscription: { status: after.status, start: after.current_period_start, end: after.current_period_end },
      count: Number((await app.request('GET', '/api/payments?status=succeeded')).body.meta.total),
    });
  }
  for (const end of ends.slice(1)) assert.deepEqual(end, ends[0]);
  assert.deepEqual(ends[0]?.payment, {
    byIntent: true,
    ofCustomer: true,
    ofSubscription: true,
    amount: 2000,
    currency: 'USD',
    status: 'succeeded',
    paid_at: '2026-01-15T10:00:00.000Z',
  });
});

test('the three reports of five renewals sent all at once: five payments, no deadlock, no retry', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const renewals = [];
  for (let i = 0; i < 5; i++) renewals.push(await paidRenewal(app));
  const events = renewals.flatMap(({ events: e }, i) =>
    i % 2 === 0 ? [e.link, e.intent, e.invoice] : [e.invoice, e.intent, e.link],
  );
  const results = await Promise.all(events.map((event) => postStripe(app, event)));
  assert.deepEqual(new Set(results.map((r) => r.status)), new Set([200]));
  const list = (await allPayments(app)).data;
  assert.deepEqual(
    list.map((p: { provider_reference: string }) => p.provider_reference).sort(),
    renewals.map((r) => r.intent.id).sort(),
  );
  for (const { subscription } of renewals) {
    const after = (await app.request('GET', `/api/subscriptions/${subscription.id}`)).body;
    assert.equal(after.current_period_end, '2026-02-15T10:00:00.000Z');
  }
  const rows = await app.deps.db.selectFrom('provider_events').select(['status', 'attempts', 'error']).execute();
  assert.deepEqual(
    rows.filter((row) => row.status !== 'processed' || row.attempts !== 1),
    [],
  );
});

test('payments recorded under the invoice and the PaymentIntent merge into the first: refunds move, payment.merged names the other', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const { subscription, intent, events } = await paidRenewal(app, 3000);
  await postStripe(app, events.invoice);
  app.clock.advance(1000);
  await postStripe(app, events.intent);
  await postStripe(
    app,
    stripeEvent('refund.created', stripeRefund({ paymentIntent: intent.id, amount: 1000 }), { apiVersion: BASIL }),
  );
  const before = (await allPayments(app)).data;
  assert.equal(before.length, 2);
  const [invoicePayment, intentPayment] = before;
  assert.equal(intentPayment.amount_refunded, 1000);

  await postStripe(app, events.link);
  const list = await allPayments(app);
  assert.equal(list.meta.total, 1);
  const [merged] = list.data;
  assert.equal(merged.id, invoicePayment.id, 'the payment recorded first stays');
  assert.equal(merged.provider_reference, intent.id);
  assert.equal(merged.subscription_id, subscription.id);
  assert.equal(merged.customer_id, subscription.customer_id);
  assert.equal(merged.amount, 3000);
  assert.equal(merged.amount_refunded, 1000);
  assert.equal(merged.status, 'partially_refunded');
  const refunds = (await app.request('GET', `/api/refunds?payment_id=${merged.id}`)).body;
  assert.equal(refunds.meta.total, 1);
  assert.equal((await app.request('GET', `/api/payments/${intentPayment.id}`)).status, 404);
  const [mergedEvent] = await topics(app, 'payment.merged');
  assert.ok(mergedEvent);
  assert.equal(mergedEvent.data.id, merged.id);
  assert.equal(mergedEvent.data.merged_payment_id, intentPayment.id);
  // A redelivered link (a new event id) changes nothing.
  await postStripe(app, { ...events.link, id: `evt_${nextSeq()}` });
  assert.deepEqual((await allPayments(app)).data, list.data);
  assert.equal((await topics(app, 'payment.merged')).length, 1);
});

for (const failureFirst of ['invoice', 'intent'] as const) {
  test(`one failure reported by invoice.payment_failed and payment_intent.payment_failed (${failureFirst} first) is one dunning attempt; the recovery renews once`, async (t) => {
    const app = await buildTestApp(t, { env: PROVIDER_ENV });
    // An active subscription, paid once under an older API version.
    const subscription = await createSubscription(app, { plan: { currency: 'USD', amount: 2000 } });
    const stripeSubscription = `sub_${nextSeq()}`;
    const firstInvoice = stripeInvoice({
      style: 'legacy',
      subscription: stripeSubscription,
      paymentIntent: `pi_${nextSeq()}`,
      subscriptionMetadata: { subscription_id: subscription.id },
    });
    await postStripe(app, stripeEvent('invoice.paid', firstInvoice, { apiVersion: '2024-06-20' }));
    const active = (await app.request('GET', `/api/subscriptions/${subscription.id}`)).body;
    assert.equal(active.status, 'active');

    app.clock.advance(31 * 86_400_000);
    const intent = stripePaymentIntent({
      amount: 2000,
      email: null,
      status: 'requires_payment_method',
      error: 'Your card was declined.',
    });
    const invoice = stripeInvoice({
      style: 'basil',
      subscription: stripeSubscription,
      paid: false,
      subscriptionMetadata: { subscription_id: subscription.id },
    });
    // Reported a month after the first payment (provider time): not a stale failure.
    const created = Math.floor(app.clock.now().getTime() / 1000);
    const failures = [
      { ...stripeEvent('invoice.payment_failed', invoice, { apiVersion: BASIL }), created },
      { ...stripeEvent('payment_intent.payment_failed', intent, { apiVersion: BASIL }), created },
    ];
    if (failureFirst === 'intent') failures.reverse();
    for (const event of failures) {
      await postStripe(app, event);
      app.clock.advance(1000);
    }
    assert.equal((await app.request('GET', `/api/subscriptions/${subscription.id}`)).body.status, 'past_due');
    let cases = (await app.request('GET', '/api/dunning/cases?status=open')).body.data;
    assert.equal(cases.length, 1);
    assert.equal(cases[0].attempts, 1);

    // The retry succeeds with the same PaymentIntent; the link arrives before invoice.paid,
    // so the merge itself owes the subscription its recovery.
    const paidIntent = { ...intent, status: 'succeeded', amount_received: 2000, last_payment_error: null };
    await postStripe(app, {
      ...stripeEvent('payment_intent.succeeded', paidIntent, { apiVersion: BASIL }),
      created: created + 60,
    });
    assert.equal((await app.request('GET', `/api/subscriptions/${subscription.id}`)).body.status, 'past_due');
    const link = stripeInvoicePayment({ invoice: invoice.id, paymentIntent: intent.id });
    await postStripe(app, stripeEvent('invoice_payment.paid', link, { apiVersion: BASIL }));
    assert.equal((await app.request('GET', `/api/subscriptions/${subscription.id}`)).body.status, 'active');
    const paidInvoice = { ...invoice, amount_paid: 2000, amount_remaining: 0, status: 'paid' };
    await postStripe(app, {
      ...stripeEvent('invoice.paid', paidInvoice, { apiVersion: BASIL }),
      created: created + 60,
    });

    const payments = (await app.request('GET', '/api/payments?limit=100')).body;
    assert.equal(payments.meta.total, 2, 'the first renewal and this one');
    const renewal = payments.data.find((p: { provider_reference: string }) => p.provider_reference === intent.id);
    assert.equal(renewal.status, 'succeeded');
    assert.equal(renewal.subscription_id, subscription.id);
    const after = (await app.request('GET', `/api/subscriptions/${subscription.id}`)).body;
    assert.equal(after.status, 'active');
    assert.equal(
      (await topics(app, 'subscription.renewed')).length + (await topics(app, 'subscription.updated')).length,
      2,
    );
    cases = (await app.request('GET', '/api/dunning/cases?status=recovered')).body.data;
    assert.equal(cases.length, 1);
    assert.equal(cases[0].attempts, 1);
    assert.equal(cases[0].payment_id, renewal.id, 'the case names the payment that survived the merge');
    assert.equal((await topics(app, 'dunning.recovered')).length, 1);
  });
}

test('a refund held for the PaymentIntent applies to the invoice payment once invoice_payment.paid links them', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const { intent, events } = await paidRenewal(app, 2500);
  await postStripe(
    app,
    stripeEvent('refund.created', stripeRefund({ paymentIntent: intent.id, amount: 2500 }), { apiVersion: BASIL }),
  );
  await postStripe(app, events.invoice);
  assert.deepEqual(
    (await inbox(app)).map((row) => row.status),
    ['held', 'processed'],
  );
  await postStripe(app, events.link);
  const [payment] = (await allPayments(app)).data;
  assert.equal(payment.provider_reference, intent.id);
  assert.equal(payment.status, 'refunded');
  assert.deepEqual(
    (await inbox(app)).map((row) => row.status),
    ['processed', 'processed', 'processed'],
  );
});

test('a link that would merge payments in two currencies, or give an invoice a second PaymentIntent, is failed and changes nothing', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const { intent, invoice, events } = await paidRenewal(app);
  await postStripe(app, events.invoice);
  await postStripe(app, stripeEvent('payment_intent.succeeded', { ...intent, currency: 'eur' }, { apiVersion: BASIL }));
  const before = (await allPayments(app)).data;
  await postStripe(app, events.link);
  assert.deepEqual((await allPayments(app)).data, before);
  const refused = (await inbox(app))[2];
  assert.equal(refused?.status, 'failed');
  assert.match(refused?.error ?? '', /different currencies/);

  const other = await paidRenewal(app);
  await postStripe(app, other.events.link);
  const second = stripeInvoicePayment({ invoice: other.invoice.id, paymentIntent: `pi_${nextSeq()}` });
  await postStripe(app, stripeEvent('invoice_payment.paid', second, { apiVersion: BASIL }));
  const last = (await inbox(app)).at(-1);
  assert.equal(last?.status, 'failed');
  assert.match(last?.error ?? '', /already linked/);
  assert.ok(invoice.id !== other.invoice.id);
});

test('invoice_payment.paid for a payment without PaymentIntent (charge, out-of-band record) or not paid is ignored', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  for (const options of [{ type: 'charge' }, { type: 'payment_record' }, { status: 'open' }] as const) {
    const object = stripeInvoicePayment({ invoice: `in_${nextSeq()}`, paymentIntent: `pi_${nextSeq()}`, ...options });
    await postStripe(app, stripeEvent('invoice_payment.paid', object, { apiVersion: BASIL }));
  }
  const rows = await inbox(app);
  assert.deepEqual(
    rows.map((row) => row.status),
    ['ignored', 'ignored', 'ignored'],
  );
  const links = await app.deps.db.selectFrom('payment_references').selectAll().execute();
  assert.equal(links.length, 0);
});
