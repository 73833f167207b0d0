// SPEC §5: NUL characters in a verified event never cause a 5xx, and never lose a payment.
// In display text (names, emails, messages, merchant notes) the NUL is removed and the
// payment recorded; in a value used as sent (identifiers, codes, currencies, amounts) the
// event is refused with a 400 and nothing is stored, so the provider retries — the same on
// SQLite (which would store the NUL) and PostgreSQL (whose text refuses it).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import { newId } from '../shared/ids.ts';
import {
  PROVIDER_ENV,
  paystackCharge,
  postPaystack,
  postStripe,
  signPaystack,
  stripeEvent,
  stripePaymentIntent,
} from '../../test/helpers/provider-events.ts';

async function inbox(app: TestApp) {
  return app.deps.db.selectFrom('provider_events').selectAll().execute();
}

async function total(app: TestApp, path: string) {
  return (await app.request('GET', `${path}?limit=1`)).body.meta.total;
}

type Post = (app: TestApp, event: unknown) => Promise<{ status: number; body: any }>;

/** Events holding a NUL where we must use the value as sent: identifiers, codes, currencies, amounts. */
const refused: [string, Post, () => unknown, string][] = [
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
    'a Stripe PaymentIntent id',
    postStripe,
    () => stripeEvent('payment_intent.succeeded', stripePaymentIntent({ id: 'pi_\u00001' })),
    'data.object.id contains a NUL character',
  ],
  [
    'a Stripe currency',
    postStripe,
    () => stripeEvent('payment_intent.succeeded', stripePaymentIntent({ currency: 'usd\u0000' })),
    'data.object.currency contains a NUL character',
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
    'a Paystack customer code',
    postPaystack,
    () => {
      const charge = paystackCharge();
      charge.data.customer.customer_code = 'CUS_\u0000x';
      return charge;
    },
    'data.customer.customer_code contains a NUL character',
  ],
  [
    'a Paystack currency',
    postPaystack,
    () => paystackCharge({ currency: 'NGN\u0000' }),
    'data.currency contains a NUL character',
  ],
  [
    'a Paystack amount given as a string',
    postPaystack,
    () => paystackCharge({ amount: '5000\u0000' }),
    'data.amount contains a NUL character',
  ],
  [
    'a Paystack metadata id',
    postPaystack,
    () => paystackCharge({ metadata: { subscription_id: 'sub_\u0000' } }),
    'data.metadata.subscription_id contains a NUL character',
  ],
];

for (const [where, post, event, reason] of refused) {
  test(`a NUL in ${where}: 400 naming it, nothing stored or recorded (the provider retries)`, async (t) => {
    const app = await buildTestApp(t, { env: PROVIDER_ENV });
    const body = JSON.stringify(event());
    assert.ok(body.includes('\\u0000'), 'the body carries the NUL as JSON escapes it');
    for (let i = 0; i < 2; i++) {
      const res = await post(app, body);
      assert.equal(res.status, 400);
      assert.equal(res.body.code, 'validation_error');
      assert.equal(res.body.message, reason);
    }
    assert.equal((await inbox(app)).length, 0);
    assert.equal(await total(app, '/api/payments'), 0);
    assert.equal(await total(app, '/api/customers'), 0);
  });
}

/** Events holding a NUL in display text only: cleaned, and the payment recorded. */
const cleaned: [string, Post, () => { body: unknown; reference: string }, { email: string; name: string | null }][] = [
  [
    'a Stripe receipt email',
    postStripe,
    () => {
      const intent = stripePaymentIntent({ email: 'nul\u0000@example.com' });
      return { body: stripeEvent('payment_intent.succeeded', intent), reference: intent.id };
    },
    { email: 'nul@example.com', name: null },
  ],
  [
    'a Paystack customer email',
    postPaystack,
    () => {
      const charge = paystackCharge({ email: 'nul\u0000@example.com' });
      return { body: charge, reference: charge.data.reference };
    },
    { email: 'nul@example.com', name: 'Ada Obi' },
  ],
  [
    'a Paystack first and last name',
    postPaystack,
    () => {
      const charge = paystackCharge({ email: 'ada@example.com' });
      charge.data.customer.first_name = 'A\u0000da';
      charge.data.customer.last_name = '\u0000';
      return { body: charge, reference: charge.data.reference };
    },
    { email: 'ada@example.com', name: 'Ada' },
  ],
  [
    "a Paystack merchant's metadata note and gateway response",
    postPaystack,
    () => {
      const charge = paystackCharge({ email: 'note@example.com', metadata: { note: 'gift\u0000', 'x\u0000': 'y' } });
      charge.data.gateway_response = 'Succ\u0000essful';
      return { body: charge, reference: charge.data.reference };
    },
    { email: 'note@example.com', name: 'Ada Obi' },
  ],
];

for (const [where, post, event, customer] of cleaned) {
  test(`a NUL in ${where}: 200, the NUL removed and the payment recorded once`, async (t) => {
    const app = await buildTestApp(t, { env: PROVIDER_ENV });
    const { body: payload, reference } = event();
    const body = JSON.stringify(payload);
    assert.ok(body.includes('\\u0000'), 'the body carries the NUL as JSON escapes it');
    for (let i = 0; i < 2; i++) assert.equal((await post(app, body)).status, 200);
    const rows = await inbox(app);
    assert.equal(rows.length, 1);
    assert.deepEqual({ status: rows[0]!.status, error: rows[0]!.error }, { status: 'processed', error: null });
    assert.equal(rows[0]!.payload, body, 'the event is kept as it was sent');
    const payments = await app.deps.db.selectFrom('payments').selectAll().execute();
    assert.equal(payments.length, 1);
    assert.equal(payments[0]!.provider_reference, reference);
    const shown = (await app.request('GET', `/api/customers/${payments[0]!.customer_id}`)).body;
    assert.deepEqual({ email: shown.email, name: shown.name }, customer);
  });
}

test('an event id holding a NUL is refused, and is distinct from one spelling the escape out, which is processed', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const nul = stripeEvent('payment_intent.succeeded', stripePaymentIntent(), { id: 'evt_\u0000x' });
  const spelled = stripeEvent('payment_intent.succeeded', stripePaymentIntent(), { id: 'evt_\\u0000x' });
  assert.equal((await postStripe(app, nul)).status, 400);
  assert.equal((await postStripe(app, spelled)).status, 200);
  const rows = await app.deps.db.selectFrom('provider_events').select(['event_key', 'event_type', 'status']).execute();
  // A backslash followed by "u0000" is ordinary text: stored as sent and processed.
  assert.deepEqual(
    rows.map((row) => ({ ...row })),
    [{ event_key: 'evt_\\u0000x', event_type: 'payment_intent.succeeded', status: 'processed' }],
  );
});

/** Stores `payload` as a row failed before this rule (a NUL made every event unusable). */
async function storeFailedRow(app: TestApp, payload: string, key: string) {
  const id = newId('providerEvent');
  await app.deps.db
    .insertInto('provider_events')
    .values({
      id,
      provider: 'paystack',
      event_key: key,
      event_type: 'charge.success',
      payload,
      status: 'failed',
      error: 'UnusableEventError: a field contains a NUL character',
      attempts: 1,
      received_at: app.clock.now().toISOString(),
      processed_at: null,
      next_attempt_at: null,
      held_reference: null,
    })
    .execute();
  return id;
}

test("rows failed before this rule: the operator's retry records the payment when the NUL was in display text, and fails it for good when in an identifier", async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const named = paystackCharge({ email: 'late@example.com' });
  named.data.customer.first_name = 'A\u0000da';
  const display = await storeFailedRow(app, JSON.stringify(named), 'charge.success:display');
  const charge = paystackCharge();
  const broken = JSON.stringify({ ...charge, data: { ...charge.data, reference: 'T\u00002' } });
  const identifier = await storeFailedRow(app, broken, 'charge.success:identifier');
  for (const id of [display, identifier]) {
    assert.equal((await app.request('POST', `/api/provider-events/${id}/retry`)).status, 200);
  }
  const rows = new Map((await inbox(app)).map((row) => [row.id, row]));
  assert.deepEqual(
    { status: rows.get(display)!.status, error: rows.get(display)!.error },
    { status: 'processed', error: null },
  );
  assert.deepEqual(
    {
      status: rows.get(identifier)!.status,
      error: rows.get(identifier)!.error,
      next: rows.get(identifier)!.next_attempt_at,
    },
    { status: 'failed', error: 'NulInValueError: data.reference contains a NUL character', next: null },
  );
  const payments = await app.deps.db.selectFrom('payments').select('provider_reference').execute();
  assert.deepEqual(
    payments.map((row) => row.provider_reference),
    [named.data.reference],
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
