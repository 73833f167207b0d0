// SPEC §10 "Saved payment methods": a succeeded payment whose event carries a reusable method
// saves it for the payment's customer, in the payment's transaction; the credential never
// shows in a response, an event or a log line.
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import {
  PROVIDER_ENV,
  paystackCharge,
  postPaystack,
  postStripe,
  stripeEvent,
  stripePaymentIntent,
} from '../../test/helpers/provider-events.ts';
import { findDefaultPaymentMethod } from '../modules/payment-methods/payment-methods.ts';

const PAYSTACK_CODE = 'AUTH_8dfhjjdt';

/** A reusable Paystack charge of `email` (the helper's authorization: visa 4081, 12/2030). */
function reusableCharge(email: string, authorization: Record<string, unknown> = {}) {
  const body = paystackCharge({ email });
  Object.assign(body.data.authorization, authorization);
  return body;
}

/** A succeeded PaymentIntent paid with `paymentMethod` by Stripe customer `customer`. */
function stripeIntent(paymentMethod: string, options: { customer?: string | null; charges?: boolean } = {}) {
  const intent: Record<string, unknown> = {
    ...stripePaymentIntent({ email: 'grace@example.com' }),
    customer: options.customer === undefined ? 'cus_QsGrace' : options.customer,
    payment_method: paymentMethod,
    payment_method_types: ['card'],
  };
  if (options.charges) {
    // API versions before 2022-11-15 embed the charges and their card details.
    intent.charges = {
      object: 'list',
      data: [
        {
          id: 'ch_3Q1',
          object: 'charge',
          payment_method: paymentMethod,
          payment_method_details: {
            type: 'card',
            card: { brand: 'mastercard', last4: '4444', exp_month: 8, exp_year: 2031, country: 'US' },
          },
        },
      ],
    };
  }
  return intent;
}

async function methodsOf(app: TestApp, customerId: string) {
  const res = await app.request('GET', `/api/customers/${customerId}/payment-methods`);
  assert.equal(res.status, 200, res.text);
  return res.body;
}

async function attachedEvents(app: TestApp) {
  return (await app.request('GET', '/api/events?topic=payment_method.attached&limit=100')).body.data as {
    data: Record<string, unknown>;
  }[];
}

async function onlyPaymentCustomer(app: TestApp): Promise<string> {
  const payments = (await app.request('GET', '/api/payments')).body;
  assert.equal(payments.meta.total, 1);
  return payments.data[0].customer_id;
}

test('a reusable Paystack charge.success saves the card for the payer: display fields shown, the code stored encrypted', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  assert.equal((await postPaystack(app, reusableCharge('ada@example.com'))).status, 200);
  const customerId = await onlyPaymentCustomer(app);
  const list = await methodsOf(app, customerId);
  assert.equal(list.meta.total, 1);
  const [method] = list.data;
  assert.match(method.id, /^pm_/);
  assert.deepEqual(
    { ...method, id: undefined },
    {
      id: undefined,
      customer_id: customerId,
      provider: 'paystack',
      status: 'active',
      type: 'card',
      brand: 'visa',
      last4: '4081',
      exp_month: 12,
      exp_year: 2030,
      default: true,
      created_at: '2026-01-15T10:00:00.000Z',
      detached_at: null,
    },
  );
  const row = await app.deps.db.selectFrom('payment_methods').selectAll().executeTakeFirstOrThrow();
  assert.equal(row.fingerprint, 'SIG_yEXu7dLBeqG0kU7g95Ke');
  assert.equal(row.email, 'ada@example.com');
  assert.ok(!row.credential.includes(PAYSTACK_CODE));
  assert.deepEqual(await findDefaultPaymentMethod(app.deps.db, app.deps, customerId), {
    id: method.id,
    provider: 'paystack',
    credential: PAYSTACK_CODE,
    providerCustomerId: null,
    email: 'ada@example.com',
  });
  const events = await attachedEvents(app);
  assert.equal(events.length, 1);
  assert.deepEqual(events[0]!.data, method);
});

test('the same card paid with twice is one method and one payment_method.attached', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  assert.equal((await postPaystack(app, reusableCharge('ada@example.com'))).status, 200);
  app.clock.advance(60_000);
  // A new authorization code for the same card: the signature says it is the same one.
  const again = reusableCharge('ada@example.com', { authorization_code: 'AUTH_second' });
  assert.equal((await postPaystack(app, again)).status, 200);
  const payments = (await app.request('GET', '/api/payments')).body;
  assert.equal(payments.meta.total, 2);
  const list = await methodsOf(app, payments.data[0].customer_id);
  assert.equal(list.meta.total, 1);
  assert.equal(list.data[0].created_at, '2026-01-15T10:00:00.000Z');
  assert.equal((await attachedEvents(app)).length, 1);
  const all = (await app.request('GET', '/api/events?limit=100')).body;
  assert.equal(all.meta.total, 4, JSON.stringify(all.data.map((e: { topic: string }) => e.topic)));
});

test('a Paystack authorization without a signature is keyed by its code; brand falls back to card_type', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const body = reusableCharge('ada@example.com', { signature: null, brand: null, card_type: 'Mastercard ' });
  assert.equal((await postPaystack(app, body)).status, 200);
  const row = await app.deps.db.selectFrom('payment_methods').selectAll().executeTakeFirstOrThrow();
  assert.equal(row.fingerprint, PAYSTACK_CODE);
  assert.equal(row.brand, 'mastercard');
});

test('a non-reusable authorization, or a payment no customer is attributed to, saves nothing', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  assert.equal((await postPaystack(app, reusableCharge('ada@example.com', { reusable: false }))).status, 200);
  const anonymous = paystackCharge();
  (anonymous.data.customer as { email: unknown }).email = null;
  assert.equal((await postPaystack(app, anonymous)).status, 200);
  const payments = (await app.request('GET', '/api/payments')).body;
  assert.equal(payments.meta.total, 2);
  assert.ok(payments.data.some((p: { customer_id: string | null }) => p.customer_id === null));
  assert.equal((await app.deps.db.selectFrom('payment_methods').select('id').execute()).length, 0);
  assert.equal((await attachedEvents(app)).length, 0);
});

test('Stripe payment_intent.succeeded with payment_method and customer saves it; card details from embedded charges', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const intent = stripeIntent('pm_1QGraceVisa', { charges: true });
  assert.equal(
    (await postStripe(app, stripeEvent('payment_intent.succeeded', intent, { apiVersion: '2020-08-27' }))).status,
    200,
  );
  const customerId = await onlyPaymentCustomer(app);
  const [method] = (await methodsOf(app, customerId)).data;
  assert.equal(method.provider, 'stripe');
  assert.equal(method.type, 'card');
  assert.equal(method.brand, 'mastercard');
  assert.equal(method.last4, '4444');
  assert.equal(method.exp_month, 8);
  assert.equal(method.exp_year, 2031);
  assert.equal(method.default, true);
  assert.deepEqual(await findDefaultPaymentMethod(app.deps.db, app.deps, customerId), {
    id: method.id,
    provider: 'stripe',
    credential: 'pm_1QGraceVisa',
    providerCustomerId: 'cus_QsGrace',
    email: null,
  });
});

test('Stripe: without embedded charges the display fields are null; without a customer nothing is saved', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  assert.equal((await postStripe(app, stripeEvent('payment_intent.succeeded', stripeIntent('pm_1QBare')))).status, 200);
  const noCustomer = stripeIntent('pm_1QGuest', { customer: null });
  assert.equal((await postStripe(app, stripeEvent('payment_intent.succeeded', noCustomer))).status, 200);
  const failed = { ...stripeIntent('pm_1QFailed'), status: 'requires_payment_method' };
  assert.equal((await postStripe(app, stripeEvent('payment_intent.payment_failed', failed))).status, 200);
  const rows = await app.deps.db.selectFrom('payment_methods').selectAll().execute();
  assert.equal(rows.length, 1);
  assert.deepEqual(
    { type: rows[0]!.type, brand: rows[0]!.brand, last4: rows[0]!.last4, exp: rows[0]!.exp_month },
    { type: 'card', brand: null, last4: null, exp: null },
  );
});

test('secrets: the authorization code and the pm id appear in no response, event or log line (debug level)', async (t) => {
  const logs = new PassThrough();
  let logged = '';
  logs.on('data', (chunk: Buffer) => (logged += chunk.toString('utf8')));
  const app = await buildTestApp(t, { env: { ...PROVIDER_ENV, LOG_LEVEL: 'debug' }, logStream: logs });
  const responses: string[] = [];
  const send = async (method: string, path: string, body?: unknown) => {
    const res = await app.request(method, path, body === undefined ? {} : { body });
    responses.push(res.text);
    return res;
  };
  responses.push((await postPaystack(app, reusableCharge('ada@example.com'))).text);
  responses.push(
    (await postStripe(app, stripeEvent('payment_intent.succeeded', stripeIntent('pm_1QSecretCard', { charges: true }))))
      .text,
  );
  const customers = (await send('GET', '/api/customers')).body.data as { id: string }[];
  for (const customer of customers) {
    const methods = (await send('GET', `/api/customers/${customer.id}/payment-methods`)).body.data;
    for (const method of methods) {
      await send('PATCH', `/api/customers/${customer.id}/payment-methods/${method.id}`, { default: true });
      await send('DELETE', `/api/customers/${customer.id}/payment-methods/${method.id}`);
    }
  }
  await send('GET', '/api/events?limit=100');
  const inbox = (await send('GET', '/api/provider-events')).body.data as { id: string }[];
  assert.equal(inbox.length, 2);
  for (const event of inbox) {
    const detail = await send('GET', `/api/provider-events/${event.id}`);
    assert.equal(detail.status, 200);
    assert.ok(detail.text.includes('[redacted]'), 'the payload is shown, its credential redacted');
  }
  const events = await app.deps.db.selectFrom('events').select(['topic', 'data']).execute();
  assert.ok(events.some((e) => e.topic === 'payment_method.detached'));
  assert.ok(logged.length > 0, 'logs were captured');
  for (const secret of [PAYSTACK_CODE, 'pm_1QSecretCard']) {
    for (const text of responses) assert.ok(!text.includes(secret), `a response shows ${secret}: ${text}`);
    for (const event of events) assert.ok(!event.data.includes(secret), `${event.topic} carries ${secret}`);
    assert.ok(!logged.includes(secret), `a log line shows ${secret}`);
  }
  // The saved rows keep neither in the clear.
  for (const row of await app.deps.db.selectFrom('payment_methods').select('credential').execute()) {
    assert.ok(!row.credential.includes(PAYSTACK_CODE) && !row.credential.includes('pm_1QSecretCard'));
  }
});
