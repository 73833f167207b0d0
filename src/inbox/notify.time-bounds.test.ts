// Times a provider reports, and the periods its payments buy, stay inside the stored range
// (src/shared/timestamps.ts): the payment is always recorded, on both databases.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import { createPayment, createSubscription } from '../../test/helpers/factories.ts';
import {
  PROVIDER_ENV,
  paystackCharge,
  postPaystack,
  postStripe,
  stripeEvent,
  stripePaymentIntent,
} from '../../test/helpers/provider-events.ts';
import { ManualClock } from '../shared/clock.ts';
import { JOBS } from '../worker/jobs.ts';
import { Worker } from '../worker/runner.ts';
import { isoTime } from '../providers/provider-values.ts';

const RECEIVED = '2026-01-15T10:00:00.000Z';
const DAY = 86_400_000;

async function paymentByReference(app: TestApp, reference: string) {
  const list = await app.request('GET', '/api/payments?limit=100');
  return list.body.data.find((p: { provider_reference: string }) => p.provider_reference === reference);
}

test('isoTime believes provider times from 2000-01-01 to receive time + 1 day; others read as the receive time', () => {
  const received = new Date(RECEIVED);
  assert.equal(isoTime('2026-01-15T09:59:58Z', received), '2026-01-15T09:59:58.000Z');
  assert.equal(isoTime(1768471100, received), '2026-01-15T09:58:20.000Z');
  assert.equal(isoTime('2000-01-01T00:00:00Z', received), '2000-01-01T00:00:00.000Z');
  assert.equal(isoTime('2026-01-16T10:00:00.000Z', received), '2026-01-16T10:00:00.000Z', 'a day of clock skew');
  for (const outside of [
    '+010000-01-01T00:00:00Z',
    '0000-01-01T00:00:00Z',
    '1999-12-31T23:59:59.999Z',
    '2026-01-16T10:00:00.001Z',
    253402300800,
    -1,
    0,
    'yesterday',
    null,
  ]) {
    assert.equal(isoTime(outside, received), RECEIVED, String(outside));
  }
});

test('a Paystack paid_at in year 10000 or year 0 is recorded with paid_at = the receive time', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  for (const paidAt of ['+010000-01-01T00:00:00Z', '0000-01-01T00:00:00Z', '1970-01-01T00:00:00Z']) {
    const charge = paystackCharge();
    charge.data.paid_at = paidAt;
    const res = await postPaystack(app, charge);
    assert.equal(res.status, 200, res.text);
    const payment = await paymentByReference(app, charge.data.reference);
    assert.ok(payment, `the payment with paid_at ${paidAt} is recorded`);
    assert.equal(payment.status, 'succeeded');
    assert.equal(payment.paid_at, RECEIVED, paidAt);
  }
});

test('a Stripe event created in year 10000 (253402300800) records its payment with paid_at = the receive time', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const intent = stripePaymentIntent();
  const event = { ...stripeEvent('payment_intent.succeeded', intent), created: 253402300800 };
  const res = await postStripe(app, event);
  assert.equal(res.status, 200, res.text);
  const payment = await paymentByReference(app, intent.id);
  assert.ok(payment, 'the payment is recorded');
  assert.equal(payment.paid_at, RECEIVED);
});

test('payments that would push current_period_end past year 9999 are recorded; the end is clamped and the subscription stays active', async (t) => {
  const clock = new ManualClock(new Date('9998-06-01T00:00:00.000Z'));
  const app = await buildTestApp(t, { env: PROVIDER_ENV, clock });
  const subscription = await createSubscription(app, { plan: { interval: 'year', interval_count: 3 } });
  await createPayment(app, { subscriptionId: subscription.id });
  const paid = (await app.request('GET', `/api/subscriptions/${subscription.id}`)).body;
  assert.equal(paid.status, 'active');
  assert.equal(paid.current_period_start, '9998-06-01T00:00:00.000Z');
  assert.equal(paid.current_period_end, '9999-12-31T23:59:59.999Z', 'three years on, clamped to the last instant');

  // An early renewal: nothing left to extend, but the money is recorded all the same.
  clock.advance(DAY);
  await createPayment(app, { subscriptionId: subscription.id });
  assert.equal((await app.request('GET', `/api/payments?subscription_id=${subscription.id}`)).body.meta.total, 2);

  // The renewal job compares period ends with the clock: the clamped end is not "overdue".
  await new Worker(app.deps, JOBS, { error: (o: object) => assert.fail(String(Object.values(o)[0])) }).runOnce();
  const after = (await app.request('GET', `/api/subscriptions/${subscription.id}`)).body;
  assert.equal(after.status, 'active', 'a paid subscription is not marked past_due');
  assert.equal(after.current_period_end, '9999-12-31T23:59:59.999Z');
});
