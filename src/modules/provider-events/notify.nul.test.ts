// SPEC §5: NUL characters in a verified event never cause a 5xx. The event is stored
// (keys and types made storable), and a NUL in its text makes it failed, not retried — the
// same on SQLite (which would store the NUL) and PostgreSQL (whose text refuses it).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';
import {
  PROVIDER_ENV,
  paystackCharge,
  postPaystack,
  postStripe,
  signPaystack,
  stripeEvent,
  stripePaymentIntent,
} from '../../../test/helpers/provider-events.ts';

async function inbox(app: TestApp) {
  return app.deps.db.selectFrom('provider_events').selectAll().execute();
}

async function total(app: TestApp, path: string) {
  return (await app.request('GET', `${path}?limit=1`)).body.meta.total;
}

type Post = (app: TestApp, event: unknown) => Promise<{ status: number }>;

const cases: [string, Post, () => unknown, string][] = [
  [
    'a Stripe event id',
    postStripe,
    () => stripeEvent('payment_intent.succeeded', stripePaymentIntent(), { id: 'evt_\u0000nul' }),
    'id contains a NUL character',
  ],
  [
    'a Stripe event type',
    postStripe,
    () => stripeEvent('payment_intent.succeeded\u0000', stripePaymentIntent()),
    'type contains a NUL character',
  ],
  [
    'a Stripe receipt email',
    postStripe,
    () => stripeEvent('payment_intent.succeeded', stripePaymentIntent({ email: 'nul\u0000@example.com' })),
    'data.object.receipt_email contains a NUL character',
  ],
  [
    'a Paystack event',
    postPaystack,
    () => ({ ...paystackCharge(), event: 'charge.success\u0000' }),
    'event contains a NUL character',
  ],
  [
    'a Paystack data.reference',
    postPaystack,
    () => {
      const charge = paystackCharge();
      return { ...charge, data: { ...charge.data, id: undefined, reference: 'T\u00001' } };
    },
    'data.reference contains a NUL character',
  ],
  [
    'a Paystack customer email',
    postPaystack,
    () => paystackCharge({ email: 'nul\u0000@example.com' }),
    'data.customer.email contains a NUL character',
  ],
  [
    'a Paystack customer name',
    postPaystack,
    () => {
      const charge = paystackCharge();
      charge.data.customer.first_name = 'A\u0000da';
      return charge;
    },
    'data.customer.first_name contains a NUL character',
  ],
  [
    'a Paystack metadata value',
    postPaystack,
    () => paystackCharge({ metadata: { subscription_id: 'sub_\u0000' } }),
    'data.metadata.subscription_id contains a NUL character',
  ],
];

for (const [where, post, event, reason] of cases) {
  test(`a NUL in ${where}: 200, stored once (a redelivery is a duplicate), failed with the reason, not retried`, async (t) => {
    const app = await buildTestApp(t, { env: PROVIDER_ENV });
    const body = JSON.stringify(event());
    assert.ok(body.includes('\\u0000'), 'the body carries the NUL as JSON escapes it');
    for (let i = 0; i < 2; i++) assert.equal((await post(app, body)).status, 200);
    const rows = await inbox(app);
    assert.equal(rows.length, 1);
    const [row] = rows;
    assert.equal(row!.status, 'failed');
    assert.equal(row!.error, `UnusableEventError: ${reason}`);
    assert.equal(row!.next_attempt_at, null);
    assert.equal(row!.payload, body);
    for (const stored of [row!.event_key, row!.event_type, row!.error]) assert.ok(!stored!.includes('\u0000'), stored!);
    assert.equal(await total(app, '/api/payments'), 0);
    assert.equal(await total(app, '/api/customers'), 0);
  });
}

test('a key or type holding a NUL is stored hashed / spelled out, and is distinct from one spelling the escape out', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const nul = stripeEvent('payment_intent.succeeded\u0000', stripePaymentIntent(), { id: 'evt_\u0000x' });
  const spelled = stripeEvent('payment_intent.succeeded', stripePaymentIntent(), { id: 'evt_\\u0000x' });
  await postStripe(app, nul);
  await postStripe(app, spelled);
  const rows = await app.deps.db
    .selectFrom('provider_events')
    .select(['event_key', 'event_type', 'status'])
    .orderBy('received_at')
    .orderBy('id')
    .execute();
  assert.equal(rows.length, 2);
  assert.match(rows[0]!.event_key, /^sha256:[0-9a-f]{64}$/);
  assert.equal(rows[0]!.event_type, 'payment_intent.succeeded\\u0000');
  assert.equal(rows[0]!.status, 'failed');
  // A backslash followed by "u0000" is ordinary text: stored as sent and processed.
  assert.deepEqual(
    { ...rows[1] },
    { event_key: 'evt_\\u0000x', event_type: 'payment_intent.succeeded', status: 'processed' },
  );
});

test('a raw NUL byte in a signed body is not JSON: 400, nothing stored', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const body = JSON.stringify(paystackCharge()).replace('"charge.success"', '"charge.\u0000success"');
  assert.ok(body.includes('\u0000'));
  const res = await app.request('POST', '/api/notify?p=paystack', {
    rawBody: body,
    headers: { 'content-type': 'application/json', 'x-paystack-signature': signPaystack(body) },
    key: null,
  });
  assert.equal(res.status, 400);
  assert.equal(res.body.code, 'validation_error');
  assert.equal((await inbox(app)).length, 0);
});
