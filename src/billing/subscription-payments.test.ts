import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import { createSubscription } from '../../test/helpers/factories.ts';
import { invoicesOf } from '../../test/helpers/invoice-payments.ts';
import { lockSubscription, transitionSubscription } from '../modules/subscriptions/subscriptions.lifecycle.ts';
import { applyFailedPayment, applySuccessfulPayment } from './subscription-payments.ts';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const NOW = '2026-01-15T10:00:00.000Z';

function pay(app: TestApp, id: string) {
  return app.deps.db.transaction().execute((trx) => applySuccessfulPayment(trx, app.deps, id));
}

function failPayment(app: TestApp, id: string) {
  return app.deps.db.transaction().execute((trx) => applyFailedPayment(trx, app.deps, id));
}

/** Subscription events so far, oldest first, as [topic, data]. */
async function subscriptionEvents(app: TestApp): Promise<{ topic: string; data: unknown }[]> {
  const res = await app.request('GET', '/api/events?limit=100&sort_order=asc');
  return res.body.data.filter((e: { topic: string }) => e.topic.startsWith('subscription.'));
}

async function lastEvent(app: TestApp) {
  const events = await subscriptionEvents(app);
  return events[events.length - 1];
}

async function active(app: TestApp, plan?: Record<string, unknown>) {
  return pay(app, (await createSubscription(app, { plan })).id);
}

test('a payment activates an incomplete subscription without moving its first period, with subscription.updated', async (t) => {
  const app = await buildTestApp(t);
  const sub = await createSubscription(app);
  assert.equal(sub.current_period_start, NOW, 'the first period starts at creation');
  assert.equal(sub.current_period_end, '2026-02-15T10:00:00.000Z');
  app.clock.advance(HOUR);
  const after = await pay(app, sub.id);
  // Paid an hour late: the period stays on the anchor (SPEC §4), only the status moves.
  assert.deepEqual(after, { ...sub, status: 'active', entitled: true, updated_at: '2026-01-15T11:00:00.000Z' });
  assert.deepEqual((await app.request('GET', `/api/subscriptions/${sub.id}`)).body, after);
  const event = await lastEvent(app);
  assert.equal(event?.topic, 'subscription.updated');
  assert.deepEqual(event?.data, after);
  const [invoice] = await invoicesOf(app, sub.id);
  assert.equal(invoice?.status, 'paid');
  assert.deepEqual([invoice?.period_start, invoice?.period_end], [NOW, '2026-02-15T10:00:00.000Z']);
});

test("the first period follows the plan's interval and interval_count", async (t) => {
  const app = await buildTestApp(t);
  const cases: [Record<string, unknown>, string][] = [
    [{ interval: 'day', interval_count: 10 }, '2026-01-25T10:00:00.000Z'],
    [{ interval: 'week', interval_count: 2 }, '2026-01-29T10:00:00.000Z'],
    [{ interval: 'month', interval_count: 3 }, '2026-04-15T10:00:00.000Z'],
    [{ interval: 'year', interval_count: 1 }, '2027-01-15T10:00:00.000Z'],
  ];
  for (const [plan, end] of cases) {
    const after = await active(app, plan);
    assert.equal(after.current_period_start, NOW, JSON.stringify(plan));
    assert.equal(after.current_period_end, end, JSON.stringify(plan));
    assert.equal(after.billing_cycle_anchor, NOW, JSON.stringify(plan));
  }
});

/** The periods of a subscription's invoices, oldest first, with their statuses. */
async function invoicedPeriods(app: TestApp, id: string): Promise<string[]> {
  return (await invoicesOf(app, id)).map((i) => `${i.period_start} ${i.period_end} ${i.status}`);
}

test('a payment during a trial pays the first period after it in advance (from trial_end) and activates it, as subscription.renewed', async (t) => {
  const app = await buildTestApp(t);
  const sub = await createSubscription(app, { trialPeriodDays: 14 });
  assert.equal(sub.billing_cycle_anchor, '2026-01-29T10:00:00.000Z', 'the periods count from the trial end');
  app.clock.advance(DAY);
  const after = await pay(app, sub.id);
  assert.equal(after.status, 'active');
  assert.equal(after.trial_end, '2026-01-29T10:00:00.000Z');
  // The subscription stays in its trial period until the renewal reaches its end.
  assert.equal(after.current_period_start, NOW);
  assert.equal(after.current_period_end, '2026-01-29T10:00:00.000Z');
  assert.deepEqual(await invoicedPeriods(app, sub.id), ['2026-01-29T10:00:00.000Z 2026-02-28T10:00:00.000Z paid']);
  assert.equal((await lastEvent(app))?.topic, 'subscription.renewed');
});

test('a payment after the trial ended pays the period that starts at trial_end, not at the payment', async (t) => {
  const app = await buildTestApp(t);
  const sub = await createSubscription(app, { trialPeriodDays: 7 });
  app.clock.advance(7 * DAY + 30 * 60_000);
  const after = await pay(app, sub.id);
  assert.equal(after.status, 'active');
  assert.deepEqual(await invoicedPeriods(app, sub.id), ['2026-01-22T10:00:00.000Z 2026-02-22T10:00:00.000Z paid']);
});

test('early payments while active pay the next periods in advance, one invoice each, without moving the period', async (t) => {
  const app = await buildTestApp(t);
  const sub = await active(app);
  app.clock.advance(20 * DAY);
  const after = await pay(app, sub.id);
  assert.equal(after.status, 'active');
  assert.equal(after.current_period_start, NOW);
  assert.equal(after.current_period_end, '2026-02-15T10:00:00.000Z');
  const twice = await pay(app, sub.id);
  assert.equal(twice.current_period_end, '2026-02-15T10:00:00.000Z');
  assert.deepEqual(await invoicedPeriods(app, sub.id), [
    '2026-01-15T10:00:00.000Z 2026-02-15T10:00:00.000Z paid',
    '2026-02-15T10:00:00.000Z 2026-03-15T10:00:00.000Z paid',
    '2026-03-15T10:00:00.000Z 2026-04-15T10:00:00.000Z paid',
  ]);
  const events = await subscriptionEvents(app);
  assert.deepEqual(
    events.map((e) => e.topic),
    ['subscription.created', 'subscription.updated', 'subscription.renewed', 'subscription.renewed'],
  );
  assert.deepEqual(events[3]?.data, twice);
});

test('a payment after the period ended pays the next period on the anchor: paying late never shifts it', async (t) => {
  const app = await buildTestApp(t);
  const sub = await active(app);
  app.clock.set(new Date('2026-02-15T10:20:00.000Z'));
  const after = await pay(app, sub.id);
  assert.equal(after.billing_cycle_anchor, NOW);
  assert.deepEqual(
    (await invoicedPeriods(app, sub.id)).at(-1),
    '2026-02-15T10:00:00.000Z 2026-03-15T10:00:00.000Z paid',
  );
  assert.equal((await lastEvent(app))?.topic, 'subscription.renewed');
});

test('a failed payment moves active and trialing to past_due (still entitled), period unchanged, with subscription.past_due', async (t) => {
  const app = await buildTestApp(t);
  for (const sub of [await active(app), await createSubscription(app, { trialPeriodDays: 5 })]) {
    app.clock.advance(HOUR);
    const after = await failPayment(app, sub.id);
    assert.deepEqual(after, {
      ...sub,
      status: 'past_due',
      entitled: true,
      updated_at: app.clock.now().toISOString(),
    });
    const event = await lastEvent(app);
    assert.equal(event?.topic, 'subscription.past_due');
    assert.deepEqual(event?.data, after);
  }
});

test('a payment recovers past_due to active without moving its period; what it pays is on the anchor', async (t) => {
  const app = await buildTestApp(t);
  // Failed mid-period (no invoice owed): the payment pays the next period in advance.
  const midPeriod = await failPayment(app, (await active(app)).id);
  app.clock.advance(DAY);
  const recovered = await pay(app, midPeriod.id);
  assert.equal(recovered.status, 'active');
  assert.equal(recovered.entitled, true);
  assert.equal(recovered.current_period_start, NOW);
  assert.equal(recovered.current_period_end, '2026-02-15T10:00:00.000Z');
  assert.deepEqual(
    (await invoicedPeriods(app, midPeriod.id)).at(-1),
    '2026-02-15T10:00:00.000Z 2026-03-15T10:00:00.000Z paid',
  );
  assert.equal((await lastEvent(app))?.topic, 'subscription.renewed');
  // Period already over: still the period that starts at its end, not at the payment.
  const late = await failPayment(app, (await active(app)).id);
  app.clock.set(new Date('2026-03-01T08:00:00.000Z'));
  const paidLate = await pay(app, late.id);
  // Created a day later: its anchor is Jan 16.
  assert.equal(paidLate.current_period_end, '2026-02-16T10:00:00.000Z');
  assert.deepEqual(
    (await invoicedPeriods(app, late.id)).at(-1),
    '2026-02-16T10:00:00.000Z 2026-03-16T10:00:00.000Z paid',
  );
});

test('a payment recovers unpaid to active; the period it pays is on the anchor', async (t) => {
  const app = await buildTestApp(t);
  const pastDue = await failPayment(app, (await active(app)).id);
  const unpaid = await app.deps.db.transaction().execute(async (trx) => {
    const row = await lockSubscription(trx, pastDue.id);
    return transitionSubscription(trx, app.deps.clock, row, 'dunning_exhausted_unpaid');
  });
  assert.equal(unpaid.status, 'unpaid');
  assert.equal(unpaid.entitled, false);
  app.clock.set(new Date('2026-03-10T00:00:00.000Z'));
  const after = await pay(app, unpaid.id);
  assert.equal(after.status, 'active');
  assert.equal(after.current_period_end, '2026-02-15T10:00:00.000Z');
  assert.deepEqual(
    (await invoicedPeriods(app, unpaid.id)).at(-1),
    '2026-02-15T10:00:00.000Z 2026-03-15T10:00:00.000Z paid',
  );
  assert.equal((await lastEvent(app))?.topic, 'subscription.renewed');
});

test('a payment after cancellation, expiry or during a pause changes nothing and emits nothing', async (t) => {
  const app = await buildTestApp(t);
  const cancelled = (await app.request('PUT', `/api/subscriptions/${(await active(app)).id}/cancel`, { body: {} }))
    .body;
  const cancelledIncomplete = (
    await app.request('PUT', `/api/subscriptions/${(await createSubscription(app)).id}/cancel`)
  ).body;
  const paused = (await app.request('PUT', `/api/subscriptions/${(await active(app)).id}/pause`)).body;
  const expiring = await createSubscription(app);
  app.clock.advance(23 * HOUR);
  const expired = await app.deps.db.transaction().execute(async (trx) => {
    const row = await lockSubscription(trx, expiring.id);
    return transitionSubscription(trx, app.deps.clock, row, 'incomplete_expired', {
      ended_at: app.clock.now().toISOString(),
      cancellation_reason: 'incomplete_expired',
    });
  });
  const before = await subscriptionEvents(app);
  app.clock.advance(HOUR);
  for (const sub of [cancelled, cancelledIncomplete, paused, expired]) {
    assert.deepEqual(await pay(app, sub.id), sub, `pay ${sub.status}`);
    assert.deepEqual(await failPayment(app, sub.id), sub, `fail ${sub.status}`);
    assert.deepEqual((await app.request('GET', `/api/subscriptions/${sub.id}`)).body, sub);
  }
  assert.deepEqual(await subscriptionEvents(app), before);
});

test('a failed payment leaves incomplete and past_due as they are, with no event', async (t) => {
  const app = await buildTestApp(t);
  const incomplete = await createSubscription(app);
  const pastDue = await failPayment(app, (await active(app)).id);
  const before = await subscriptionEvents(app);
  app.clock.advance(HOUR);
  for (const sub of [incomplete, pastDue]) {
    assert.deepEqual(await failPayment(app, sub.id), sub, sub.status);
  }
  assert.deepEqual(await subscriptionEvents(app), before);
});

test('the status change and its event roll back with the caller’s transaction', async (t) => {
  const app = await buildTestApp(t);
  const sub = await createSubscription(app);
  await assert.rejects(
    app.deps.db.transaction().execute(async (trx) => {
      const after = await applySuccessfulPayment(trx, app.deps, sub.id);
      assert.equal(after.status, 'active');
      throw new Error('recording the payment failed');
    }),
    /recording the payment failed/,
  );
  assert.deepEqual((await app.request('GET', `/api/subscriptions/${sub.id}`)).body, sub);
  assert.deepEqual(
    (await subscriptionEvents(app)).map((e) => e.topic),
    ['subscription.created'],
  );
});

test('payments for unknown or malformed subscription ids throw 404 not_found', async (t) => {
  const app = await buildTestApp(t);
  for (const id of ['sub_01JD3Q7Z8X9Y0A1B2C3D4E5F6G', 'nope']) {
    await assert.rejects(pay(app, id), { code: 'not_found', status: 404 });
    await assert.rejects(failPayment(app, id), { code: 'not_found', status: 404 });
  }
});
