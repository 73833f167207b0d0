// Events of test clock customers (SPEC §6, §11): webhook endpoints receive them by when they
// were written in real time, whatever the clock reads, and every event a clock's time stamps
// names the clock — on both databases, the notify path's one-statement insert included.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';
import { createWebhookEndpoint } from '../../../test/helpers/factories.ts';
import { PROVIDER_ENV, paystackCharge, postPaystack } from '../../../test/helpers/provider-events.ts';
import { answer, startReceiver } from '../../../test/helpers/webhook-receiver.ts';
import { buildWebhookTestApp } from '../../../test/helpers/webhooks.ts';

const ENV = { TEST_CLOCKS: 'true' };

async function createClock(app: TestApp, frozenTime: string) {
  const res = await app.request('POST', '/api/test-clocks', { body: { frozen_time: frozenTime } });
  assert.equal(res.status, 201, res.text);
  return res.body as { id: string };
}

async function createClockCustomer(app: TestApp, clockId: string, email: string) {
  const res = await app.request('POST', '/api/customers', { body: { email, test_clock: clockId } });
  assert.equal(res.status, 201, res.text);
  return res.body as { id: string; created_at: string };
}

test('an endpoint receives every event written after its creation in real time, whatever time a test clock stamped on it', async (t) => {
  const app = await buildWebhookTestApp(t, { env: ENV });
  const receiver = await startReceiver(t);
  const past = await createClock(app, '2020-01-01T00:00:00.000Z');
  const future = await createClock(app, '2030-01-01T00:00:00.000Z');
  // Written before the endpoint exists, stamped years after it: an older backlog all the same.
  const early = await createClockCustomer(app, future.id, 'early@example.com');
  app.clock.advance(1);
  await createWebhookEndpoint(app, receiver.url, { events: ['customer.created'] });
  app.clock.advance(1);
  // Written after the endpoint, stamped years before it: the docs/test-clocks.md walk-through's case.
  const late = await createClockCustomer(app, past.id, 'late@example.com');
  assert.equal(late.created_at, '2020-01-01T00:00:00.000Z');

  await app.dispatcher.runUntilIdle();
  assert.deepEqual(
    receiver.requests.map((request) => JSON.parse(request.body).data.id),
    [late.id],
    'the clock customer created after the endpoint, and only it',
  );
  const events = (await app.request('GET', '/api/events?topic=customer.created&sort_order=asc')).body.data;
  const byCustomer = new Map(events.map((event: { data: { id: string } }) => [event.data.id, event]));
  const delivered = byCustomer.get(late.id) as { delivered: boolean; created_at: string; data: { test_clock: string } };
  assert.equal(delivered.delivered, true);
  assert.equal(delivered.created_at, '2020-01-01T00:00:00.000Z', 'the event keeps its clock time');
  assert.equal(delivered.data.test_clock, past.id);
  // The backlog event had no endpoint to go to when it was written: nothing was due.
  assert.equal((byCustomer.get(early.id) as { delivered: boolean }).delivered, true);
});

test("an event a clock customer's receiver has not taken yet is not delivered", async (t) => {
  const app = await buildWebhookTestApp(t, { env: ENV });
  const receiver = await startReceiver(t, answer(500));
  await createWebhookEndpoint(app, receiver.url, { events: ['customer.created'] });
  const clock = await createClock(app, '2020-01-01T00:00:00.000Z');
  app.clock.advance(1);
  const customer = await createClockCustomer(app, clock.id, 'waiting@example.com');
  await app.dispatcher.runUntilIdle();
  assert.equal(receiver.requests.length, 1, 'tried');
  const [event] = (await app.request('GET', '/api/events?topic=customer.created')).body.data;
  assert.equal(event.data.id, customer.id);
  assert.equal(event.delivered, false);
  assert.equal((await app.request('GET', '/api/events?delivered=false')).body.meta.total, 1);
});

test('payment_method.attached for a clock customer names the clock and carries its time (both databases)', async (t) => {
  const app = await buildTestApp(t, { env: { ...ENV, ...PROVIDER_ENV } });
  const clock = await createClock(app, '2026-03-01T00:00:00.000Z');
  const customer = await createClockCustomer(app, clock.id, 'card@example.com');
  const res = await postPaystack(
    app,
    paystackCharge({ email: 'card@example.com', metadata: { customer_id: customer.id } }),
  );
  assert.equal(res.status, 200, res.text);
  const [attached] = (await app.request('GET', '/api/events?topic=payment_method.attached')).body.data;
  assert.ok(attached, 'the reusable card was saved');
  assert.equal(attached.data.customer_id, customer.id);
  assert.equal(attached.data.test_clock, clock.id);
  assert.equal(attached.created_at, '2026-03-01T00:00:00.000Z');
});
