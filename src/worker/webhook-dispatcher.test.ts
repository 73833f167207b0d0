import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { test } from 'node:test';
import { ON_POSTGRES } from '../../test/helpers/database.ts';
import { createCustomer, createWebhookEndpoint } from '../../test/helpers/factories.ts';
import { answer, startReceiver } from '../../test/helpers/webhook-receiver.ts';
import { buildWebhookTestApp, type WebhookTestApp } from '../../test/helpers/webhooks.ts';
import { connectSecondInstance } from '../../test/helpers/app.ts';
import { Worker } from './runner.ts';
import { claimDueDeliveries, nextDeliveryDueAt } from '../modules/webhooks/webhooks.delivery-leases.ts';
import { WebhookDispatcher, webhookDeliveryService } from './webhook-dispatcher.ts';
import { fanOutEvents } from '../modules/webhooks/webhooks.fan-out.ts';
import { setWebhookNetwork, webhookNetwork } from '../modules/webhooks/webhooks.network.ts';

const SECONDS = 1000;

function topicsOf(requests: { body: string }[]): string[] {
  return requests.map((r) => JSON.parse(r.body).topic).sort();
}

async function deliveryRows(app: WebhookTestApp) {
  return app.deps.db.selectFrom('webhook_deliveries').selectAll().execute();
}

test('fan-out: one delivery per enabled endpoint whose events match, exactly once', async (t) => {
  const app = await buildWebhookTestApp(t);
  const created = await startReceiver(t);
  const everything = await startReceiver(t);
  const payments = await startReceiver(t);
  const off = await startReceiver(t);
  await createWebhookEndpoint(app, created.url, { events: ['customer.created'] });
  await createWebhookEndpoint(app, everything.url, { events: ['*'] });
  await createWebhookEndpoint(app, payments.url, { events: ['payment.succeeded', 'payment.failed'] });
  const disabled = await createWebhookEndpoint(app, off.url, { events: ['*'] });
  await app.request('PATCH', `/api/webhooks/${disabled.id}`, { body: { status: 'disabled' } });
  const customer = await createCustomer(app);
  await app.request('PATCH', `/api/customers/${customer.id}`, { body: { name: 'Renamed' } });

  await app.dispatcher.runUntilIdle();
  await app.dispatcher.runUntilIdle();
  assert.deepEqual(topicsOf(created.requests), ['customer.created']);
  assert.deepEqual(topicsOf(everything.requests), [
    'customer.created',
    'customer.updated',
    'webhook_endpoint.disabled',
  ]);
  assert.equal(payments.requests.length, 0);
  assert.equal(off.requests.length, 0);
  assert.equal((await deliveryRows(app)).length, 4);
  assert.equal(await fanOutEvents(app.deps.db, app.clock, 100), 0, 'nothing left to fan out');
});

test('an endpoint receives events from its creation on, not an older backlog', async (t) => {
  const app = await buildWebhookTestApp(t);
  const receiver = await startReceiver(t);
  await createCustomer(app); // committed before the endpoint exists, not fanned out yet
  app.clock.advance(1);
  await createWebhookEndpoint(app, receiver.url);
  const later = await createCustomer(app);
  await app.dispatcher.runUntilIdle();
  assert.equal(receiver.requests.length, 1);
  assert.equal(JSON.parse(receiver.requests[0]!.body).data.id, later.id);
});

test('an event is delivered once each of its deliveries succeeded, or when none was due', async (t) => {
  const app = await buildWebhookTestApp(t);
  const ok = await startReceiver(t);
  const failing = await startReceiver(t, answer(500));
  await createWebhookEndpoint(app, ok.url);
  const broken = await createWebhookEndpoint(app, failing.url);
  await createCustomer(app);
  await app.dispatcher.runUntilIdle();
  const [event] = (await app.request('GET', '/api/events?topic=customer.created')).body.data;
  assert.equal(event.delivered, false, 'one of two deliveries failed');
  assert.equal((await app.request('GET', '/api/events?delivered=false')).body.meta.total, 1);

  failing.behave(answer(200));
  app.clock.advance(5 * SECONDS);
  await app.dispatcher.runUntilIdle();
  const delivered = (await app.request('GET', `/api/events/${event.id}`)).body;
  assert.equal(delivered.delivered, true);
  assert.equal(delivered.delivered_at, app.clock.now().toISOString());

  // Deleting an endpoint drops its pending deliveries: the event no longer waits for them.
  failing.behave(answer(500));
  await createCustomer(app);
  await app.dispatcher.runUntilIdle();
  const waiting = (await app.request('GET', '/api/events?topic=customer.created&delivered=false')).body.data;
  assert.equal(waiting.length, 1);
  assert.equal((await app.request('DELETE', `/api/webhooks/${broken.id}`)).status, 204);
  assert.equal((await app.request('GET', `/api/events/${waiting[0].id}`)).body.delivered, true);
  assert.equal(
    (await deliveryRows(app)).every((row) => row.endpoint_id !== broken.id),
    true,
  );

  // With no endpoint interested, an event is delivered as soon as it is fanned out.
  const plan = await app.request('POST', '/api/plans', {
    body: { name: 'P', amount: 100, currency: 'USD', interval: 'month' },
  });
  assert.equal(plan.status, 201);
  await app.dispatcher.runUntilIdle();
  assert.equal((await app.request('GET', '/api/events?delivered=false')).body.meta.total, 0);
});

test('a slow endpoint holds only its own slots; the others are delivered meanwhile', async (t) => {
  const app = await buildWebhookTestApp(t, { dispatcher: { maxInFlight: 4, maxPerEndpoint: 2 } });
  const held: ServerResponse[] = [];
  let concurrent = 0;
  let mostConcurrent = 0;
  const slow = await startReceiver(t, (_request, res) => {
    concurrent += 1;
    mostConcurrent = Math.max(mostConcurrent, concurrent);
    res.on('close', () => (concurrent -= 1));
    held.push(res);
  });
  const fast = await startReceiver(t);
  await createWebhookEndpoint(app, slow.url);
  await createWebhookEndpoint(app, fast.url);
  for (let i = 0; i < 5; i++) await createCustomer(app);

  const run = app.dispatcher.runUntilIdle();
  await slow.waitFor(2);
  const dispatcher = app.dispatcher;
  // While the slow endpoint holds its 2 slots, the fast one gets all 5 through the other slots.
  while (fast.requests.length < 5) {
    await dispatcher.pass();
    await new Promise((resolve) => setImmediate(resolve));
  }
  await fast.waitFor(5);
  assert.equal(slow.requests.length, 2);
  for (let released = 0; released < 5; released++) {
    await slow.waitFor(released + 1);
    while (held.length > 0) held.shift()!.writeHead(200).end();
  }
  await run;
  await app.dispatcher.runUntilIdle();
  assert.equal(slow.requests.length, 5);
  assert.equal(mostConcurrent, 2, 'never more than maxPerEndpoint requests to one endpoint');
});

test("a crashed worker's leased deliveries are sent again once the lease runs out", async (t) => {
  const app = await buildWebhookTestApp(t, { env: { WEBHOOK_TIMEOUT: '10s' } });
  const receiver = await startReceiver(t);
  const endpoint = await createWebhookEndpoint(app, receiver.url);
  await createCustomer(app);
  await fanOutEvents(app.deps.db, app.clock, 10);
  // Another worker claims the delivery and dies before sending it.
  const claimed = await claimDueDeliveries(app.deps.db, app.clock, {
    limit: 10,
    fullEndpoints: [],
    room: new Map(),
    defaultRoom: 10,
    owner: 'crashed-worker',
    leaseMs: 70 * SECONDS,
  });
  assert.equal(claimed.length, 1);
  await app.dispatcher.runUntilIdle();
  assert.equal(receiver.requests.length, 0, 'leased to the other worker');
  app.clock.advance(70 * SECONDS);
  await app.dispatcher.runUntilIdle();
  assert.equal(receiver.requests.length, 1);
  const [delivery] = (await app.request('GET', `/api/webhooks/${endpoint.id}/deliveries`)).body.data;
  assert.equal(delivery.status, 'succeeded');
  assert.equal(delivery.attempt_count, 1);
});

test('stop with a grace period aborts in-flight requests and gives their leases back', async (t) => {
  const app = await buildWebhookTestApp(t);
  const receiver = await startReceiver(t, () => {});
  const endpoint = await createWebhookEndpoint(app, receiver.url);
  await createCustomer(app);
  const dispatcher = app.newDispatcher();
  dispatcher.start();
  await receiver.waitFor(1);
  assert.equal(dispatcher.inFlight, 1);
  await dispatcher.stop({ graceMs: 0 });
  const [row] = await deliveryRows(app);
  assert.equal(row!.locked_by, null);
  assert.equal(row!.locked_until, null);
  assert.equal(row!.attempt_count, 0, 'no attempt recorded for an aborted send');

  receiver.behave(answer(200));
  await app.dispatcher.runUntilIdle();
  assert.equal(receiver.requests.length, 2);
  const [delivery] = (await app.request('GET', `/api/webhooks/${endpoint.id}/deliveries`)).body.data;
  assert.equal(delivery.status, 'succeeded');
});

test('the worker runs delivery as a service: an event is sent without a poll, and stop() drains it', async (t) => {
  const app = await buildWebhookTestApp(t, { env: { WORKER_POLL_INTERVAL: '1h' } });
  let finish: (() => void) | undefined;
  const receiver = await startReceiver(t, (_request, res) => {
    finish = () => res.writeHead(200).end();
  });
  const endpoint = await createWebhookEndpoint(app, receiver.url);
  const errors: unknown[] = [];
  const worker = new Worker(app.deps, [], { error: (object) => errors.push(object) }, [webhookDeliveryService]);
  worker.start();
  await new Promise((resolve) => setImmediate(resolve)); // the first pass finds nothing and sleeps 1 h
  await createCustomer(app); // the outbox doorbell wakes it
  await receiver.waitFor(1);
  const stopped = worker.stop();
  finish!();
  await stopped;
  const [delivery] = (await app.request('GET', `/api/webhooks/${endpoint.id}/deliveries`)).body.data;
  assert.equal(delivery.status, 'succeeded', 'the in-flight request finished and was recorded');
  assert.deepEqual(errors, []);
});

test(
  'two workers on two connections fan out and send each delivery exactly once',
  {
    skip: !ON_POSTGRES && 'PostgreSQL only: SQLite in memory cannot be opened by a second handle',
  },
  async (t) => {
    const app = await buildWebhookTestApp(t);
    const second = await connectSecondInstance(app);
    t.after(() => second.close());
    setWebhookNetwork(second, webhookNetwork(app.deps));
    const a = await startReceiver(t);
    const b = await startReceiver(t);
    await createWebhookEndpoint(app, a.url);
    await createWebhookEndpoint(app, b.url, { events: ['customer.created'] });
    const count = 40;
    for (let i = 0; i < count; i++) await createCustomer(app);

    const one = app.newDispatcher({ fanOutBatch: 5, maxInFlight: 8 });
    const two = new WebhookDispatcher(second, { fanOutBatch: 5, maxInFlight: 8, random: () => 0.5 });
    t.after(() => two.stop());
    await Promise.all([one.runUntilIdle(), two.runUntilIdle()]);
    await one.runUntilIdle();

    assert.equal((await deliveryRows(app)).length, 2 * count);
    for (const receiver of [a, b]) {
      const ids = receiver.requests.map((r) => r.headers['x-event-id']);
      assert.equal(ids.length, count);
      assert.equal(new Set(ids).size, count, 'no event twice');
    }
    const attempts = await app.deps.db.selectFrom('webhook_attempts').select('delivery_id').execute();
    assert.equal(attempts.length, 2 * count);
  },
);

test('an idle dispatcher wakes for the next delivery to come due: a retry, or a lease running out', async (t) => {
  const app = await buildWebhookTestApp(t);
  const receiver = await startReceiver(t, answer(500));
  await createWebhookEndpoint(app, receiver.url);
  await createCustomer(app);
  const now = app.clock.now();
  assert.equal(await nextDeliveryDueAt(app.deps.db, now), null, 'nothing pending yet');
  await app.dispatcher.runUntilIdle(); // the attempt fails: a retry is scheduled
  const [delivery] = await deliveryRows(app);
  assert.equal(delivery!.status, 'pending');
  const retry = await nextDeliveryDueAt(app.deps.db, app.clock.now());
  assert.equal(retry?.toISOString(), new Date(delivery!.next_attempt_at!).toISOString());
  assert.ok(retry!.getTime() > app.clock.now().getTime());
  // Due now and leased by another worker: it comes due when the lease runs out.
  const leased = new Date(app.clock.now().getTime() + 90 * SECONDS).toISOString();
  await app.deps.db
    .updateTable('webhook_deliveries')
    .set({ next_attempt_at: app.clock.now().toISOString(), locked_until: leased })
    .execute();
  assert.equal((await nextDeliveryDueAt(app.deps.db, app.clock.now()))?.toISOString(), leased);
});
