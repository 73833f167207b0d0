import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import {
  PROVIDER_ENV,
  paystackCharge,
  postPaystack,
  postStripe,
  signPaystack,
  signStripe,
  STRIPE_SECRET,
  stripeEvent,
  stripePaymentIntent,
} from '../../test/helpers/provider-events.ts';

async function inboxCount(app: TestApp): Promise<number> {
  const row = await app.deps.db
    .selectFrom('provider_events')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

async function nothingChanged(app: TestApp): Promise<void> {
  assert.equal(await inboxCount(app), 0, 'inbox is empty');
  assert.equal((await app.request('GET', '/api/payments')).body.meta.total, 0, 'no payments');
  assert.equal((await app.request('GET', '/api/customers')).body.meta.total, 0, 'no customers');
  assert.equal((await app.request('GET', '/api/events')).body.meta.total, 0, 'no events');
}

function assert401(res: { status: number; body: { code: string; message: string; details: unknown } }, reason: RegExp) {
  assert.equal(res.status, 401);
  assert.equal(res.body.code, 'authentication_error');
  assert.match(res.body.message, reason);
  assert.equal(res.body.details, null);
}

test('paystack: missing, empty, garbled or wrongly keyed signatures are 401 and store nothing', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const body = JSON.stringify(paystackCharge());
  const good = signPaystack(body);
  const cases: [string | null, RegExp][] = [
    [null, /missing signature/],
    ['', /missing signature/],
    ['not-hex-at-all', /invalid signature/],
    [good.slice(0, 127), /invalid signature/],
    [`${good}00`, /invalid signature/],
    [good.replace(/^./, (c) => (c === 'a' ? 'b' : 'a')), /invalid signature/],
    [signPaystack(body, 'sk_test_wrong_secret'), /invalid signature/],
    [createSha256Lookalike(body), /invalid signature/],
  ];
  for (const [signature, reason] of cases) {
    assert401(await postPaystack(app, body, { signature }), reason);
  }
  // The signature covers the exact bytes: the same JSON re-serialized does not pass.
  const reformatted = JSON.stringify(JSON.parse(body), null, 2);
  assert401(await postPaystack(app, reformatted, { signature: good }), /invalid signature/);
  await nothingChanged(app);
});

function createSha256Lookalike(body: string): string {
  // A right-length hex string that is not the HMAC (e.g. SHA-512 without the key).
  return signPaystack(body, '').split('').reverse().join('');
}

test('stripe: missing, garbled, v0-only, wrong-secret and out-of-tolerance signatures are 401', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const body = JSON.stringify(stripeEvent('payment_intent.succeeded', stripePaymentIntent()));
  const now = Math.floor(app.clock.now().getTime() / 1000);
  const good = signStripe(body, now);
  const v1 = good.split(',v1=')[1]!;
  const cases: [string | null, RegExp][] = [
    [null, /missing signature/],
    ['', /missing signature/],
    ['garbage', /invalid signature/],
    [`t=${now}`, /invalid signature/],
    [`v1=${v1}`, /invalid signature/],
    [`t=${now}abc,v1=${v1}`, /invalid signature/],
    [`t=${now},t=${now},v1=${v1}`, /invalid signature/],
    [`t=${now},v1=${'0'.repeat(64)}`, /invalid signature/],
    [signStripe(body, now, STRIPE_SECRET, 'v0'), /invalid signature/],
    [signStripe(body, now, 'whsec_wrong'), /invalid signature/],
    [signStripe(body, now - 301), /tolerance/],
    [signStripe(body, now + 301), /tolerance/],
    [signStripe(`${body} `, now), /invalid signature/],
  ];
  for (const [signature, reason] of cases) {
    assert401(await postStripe(app, body, { signature }), reason);
  }
  await nothingChanged(app);
});

test('stripe: timestamps within 300 s either way pass; any one matching v1 among several passes', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const now = Math.floor(app.clock.now().getTime() / 1000);
  for (const timestamp of [now - 300, now + 300]) {
    const body = JSON.stringify(stripeEvent('payment_intent.succeeded', stripePaymentIntent()));
    assert.equal((await postStripe(app, body, { timestamp })).status, 200);
  }
  const body = JSON.stringify(stripeEvent('payment_intent.succeeded', stripePaymentIntent()));
  const good = signStripe(body, now);
  const rotated = `t=${now},v1=${'a'.repeat(64)},${good.split(',')[1]},v0=${'b'.repeat(64)}`;
  assert.equal((await postStripe(app, body, { signature: rotated })).status, 200);
  assert.equal((await app.request('GET', '/api/payments')).body.meta.total, 3);
});

test('a provider without a configured secret answers 401 for anything', async (t) => {
  const app = await buildTestApp(t, { env: { PAYSTACK_SECRET_KEY: '', STRIPE_WEBHOOK_SECRET: '' } });
  const paystack = JSON.stringify(paystackCharge());
  // Signed with the empty key: still refused, never "verified".
  assert401(await postPaystack(app, paystack, { signature: signPaystack(paystack, '') }), /no signing secret/);
  const stripe = JSON.stringify(stripeEvent('payment_intent.succeeded', stripePaymentIntent()));
  assert401(await postStripe(app, stripe), /no signing secret/);
  await nothingChanged(app);
});

test('missing or unknown p is 400 validation_error', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const body = JSON.stringify(paystackCharge());
  const headers = { 'content-type': 'application/json', 'x-paystack-signature': signPaystack(body) };
  for (const path of ['/api/notify', '/api/notify?p=', '/api/notify?p=razorpay', '/api/notify?p=PAYSTACK']) {
    const res = await app.request('POST', path, { rawBody: body, headers, key: null });
    assert.equal(res.status, 400, path);
    assert.equal(res.body.code, 'validation_error');
    assert.equal(res.body.title, 'Bad Request');
    assert.match(res.body.message, /^p (is required|must be one of: paystack, stripe)$/i);
  }
  await nothingChanged(app);
});

test('a verified body that is not JSON is 400 and stores nothing', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  for (const body of ['not json', '{"event": "charge.success",', '']) {
    const paystack = await postPaystack(app, body);
    assert.equal(paystack.status, 400, JSON.stringify(body));
    assert.equal(paystack.body.code, 'validation_error');
    assert.equal(paystack.body.message, 'request body is not valid JSON');
  }
  const stripe = await postStripe(app, '{"id": "evt_1", "type": ');
  assert.equal(stripe.status, 400);
  await nothingChanged(app);
});

test('bodies over 1 MiB are 413, before anything else', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const big = JSON.stringify({ ...paystackCharge(), padding: 'x'.repeat(1024 * 1024) });
  const res = await postPaystack(app, big);
  assert.equal(res.status, 413);
  assert.equal(res.body.code, 'validation_error');
  await nothingChanged(app);
});

test('any content type (or none) is read as raw bytes for the signature', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  for (const contentType of ['text/plain', 'application/json; charset=utf-8', 'application/octet-stream']) {
    const res = await postPaystack(app, paystackCharge(), { headers: { 'content-type': contentType } });
    assert.equal(res.status, 200, contentType);
  }
  const body = JSON.stringify(paystackCharge());
  const res = await app.request('POST', '/api/notify?p=paystack', {
    rawBody: body,
    headers: { 'x-paystack-signature': signPaystack(body) },
    key: null,
  });
  assert.equal(res.status, 200);
  assert.equal((await app.request('GET', '/api/payments')).body.meta.total, 4);
});

test('verified JSON a handled type cannot use is stored as failed with its reason, answered 200, changes nothing', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const cases: [unknown, RegExp][] = [
    [
      { ...paystackCharge(), data: { ...paystackCharge().data, reference: undefined, id: 91 } },
      /data.reference is missing/,
    ],
    [paystackCharge({ amount: -500 }), /data.amount must be a non-negative integer/],
    [paystackCharge({ amount: 12.5 }), /data.amount must be a non-negative integer/],
    [paystackCharge({ amount: '12.50' }), /data.amount must be a non-negative integer/],
    [paystackCharge({ currency: 'XYZ' }), /ISO 4217/],
    [paystackCharge({ currency: undefined as unknown as string, amount: 100 }), /ISO 4217|currency/],
    [{ event: 'charge.success' }, /data is missing/],
    [{ data: { id: 5 } }, /event is missing/],
    [[1, 2, 3], /event is missing/],
  ];
  // paystackCharge() fills a default currency; make the no-currency case really lack it.
  (cases[5]![0] as { data: Record<string, unknown> }).data.currency = null;
  for (const [payload, reason] of cases) {
    const res = await postPaystack(app, payload);
    assert.equal(res.status, 200, JSON.stringify(payload).slice(0, 80));
    assert.deepEqual(res.body, { received: true });
    const row = await app.deps.db
      .selectFrom('provider_events')
      .selectAll()
      .orderBy('received_at', 'desc')
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow();
    assert.equal(row.status, 'failed');
    assert.match(row.error ?? '', reason);
    assert.equal(row.next_attempt_at, null, 'a retry would not help');
    assert.equal(row.payload, JSON.stringify(payload));
  }
  const stripeCases: [unknown, RegExp][] = [
    [stripeEvent('payment_intent.succeeded', stripePaymentIntent({ amount: -1 })), /non-negative integer/],
    [stripeEvent('payment_intent.succeeded', stripePaymentIntent({ currency: 'zzz' })), /ISO 4217/],
    [{ id: 'evt_no_object', type: 'invoice.paid', data: {} }, /data.object is missing/],
    [{ id: 'evt_no_type', data: { object: {} } }, /type is missing/],
  ];
  for (const [payload, reason] of stripeCases) {
    const res = await postStripe(app, payload);
    assert.equal(res.status, 200);
    const row = await app.deps.db
      .selectFrom('provider_events')
      .selectAll()
      .where('provider', '=', 'stripe')
      .orderBy('received_at', 'desc')
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow();
    assert.equal(row.status, 'failed');
    assert.match(row.error ?? '', reason);
  }
  assert.equal(await inboxCount(app), cases.length + stripeCases.length);
  assert.equal((await app.request('GET', '/api/payments')).body.meta.total, 0);
  assert.equal((await app.request('GET', '/api/customers')).body.meta.total, 0);
  assert.equal((await app.request('GET', '/api/events')).body.meta.total, 0);
});

test('notify needs no API key and is in /openapi.json', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const res = await postPaystack(app, paystackCharge(), { headers: { authorization: 'Bearer wrong' } });
  assert.equal(res.status, 200);
  const doc = (await app.request('GET', '/openapi.json', { key: null })).body;
  const operation = doc.paths['/api/notify'].post;
  assert.deepEqual(operation.parameters.find((p: { name: string }) => p.name === 'p').schema.enum, [
    'paystack',
    'stripe',
  ]);
  assert.ok(operation.responses['401']);
  assert.ok(doc.paths['/api/payments'].get);
  assert.ok(doc.paths['/api/refunds/{id}'].get);
});
