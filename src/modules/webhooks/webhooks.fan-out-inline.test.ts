// A worker batch's events written fanned out (fanOutAsWritten): the same deliveries as the
// webhook worker's fan-out would write, each event sent once, and nothing left for that
// fan-out to claim or rewrite.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createWebhookEndpoint } from '../../../test/helpers/factories.ts';
import { startReceiver } from '../../../test/helpers/webhook-receiver.ts';
import { buildWebhookTestApp } from '../../../test/helpers/webhooks.ts';
import { deferEvents, emitEvent, flushEvents } from '../events/events.service.ts';
import { fanOutAsWritten, fanOutEvents } from './webhooks.fan-out.ts';

test('a batch written fanned out gets the deliveries the fan-out rule gives, each sent once', async (t) => {
  const app = await buildWebhookTestApp(t);
  const receiver = await startReceiver(t);
  const all = await createWebhookEndpoint(app, `${receiver.url}/all`, { events: ['*'] });
  const invoices = await createWebhookEndpoint(app, `${receiver.url}/invoices`, { events: ['invoice.created'] });
  const disabled = await createWebhookEndpoint(app, `${receiver.url}/disabled`, { events: ['*'] });
  const off = await app.request('PATCH', `/api/webhooks/${disabled.id}`, { body: { status: 'disabled' } });
  assert.equal(off.status, 200, off.text);
  // Events the endpoints' creation wrote are fanned out the usual way first.
  while ((await fanOutEvents(app.deps.db, app.clock, 100)) > 0);
  await app.dispatcher.runUntilIdle();
  const before = receiver.requests.length;

  const ids = await app.deps.db.transaction().execute(async (trx) => {
    deferEvents(trx);
    const written = [
      await emitEvent(trx, app.clock, 'invoice.created', { id: 'inv_inline1', object: 'invoice' }),
      await emitEvent(trx, app.clock, 'payment.succeeded', { id: 'pay_inline1', object: 'payment' }),
    ];
    await flushEvents(trx, fanOutAsWritten(app.clock));
    return written;
  });

  const events = await app.deps.db
    .selectFrom('events')
    .select(['id', 'topic', 'fanned_out_at', 'pending_deliveries', 'delivered_at'])
    .where('id', 'in', ids)
    .orderBy('topic')
    .execute();
  assert.deepEqual(
    events.map((event) => [event.topic, Number(event.pending_deliveries), event.fanned_out_at !== null]),
    [
      ['invoice.created', 2, true],
      ['payment.succeeded', 1, true],
    ],
  );
  const deliveries = await app.deps.db
    .selectFrom('webhook_deliveries')
    .select(['event_id', 'endpoint_id'])
    .where('event_id', 'in', ids)
    .execute();
  const pairs = deliveries.map((d) => `${d.event_id === ids[0] ? 'invoice' : 'payment'}→${d.endpoint_id}`).sort();
  assert.deepEqual(pairs, [`invoice→${all.id}`, `invoice→${invoices.id}`, `payment→${all.id}`].sort());

  assert.equal(await fanOutEvents(app.deps.db, app.clock, 100), 0, 'nothing left for the fan-out to claim');
  await app.dispatcher.runUntilIdle();
  await receiver.waitFor(before + 3);
  const sent = receiver.requests.slice(before).map((request) => `${request.path} ${JSON.parse(request.body).topic}`);
  assert.deepEqual(
    sent.sort(),
    ['/hook/all invoice.created', '/hook/all payment.succeeded', '/hook/invoices invoice.created'].sort(),
  );
  const after = await app.deps.db
    .selectFrom('events')
    .select(['pending_deliveries', 'delivered_at'])
    .where('id', 'in', ids)
    .execute();
  assert.ok(
    after.every((event) => Number(event.pending_deliveries) === 0 && event.delivered_at !== null),
    'delivered',
  );
});

test('with no endpoint, a batch written fanned out is delivered at once', async (t) => {
  const app = await buildWebhookTestApp(t);
  const id = await app.deps.db.transaction().execute(async (trx) => {
    deferEvents(trx);
    const written = await emitEvent(trx, app.clock, 'invoice.paid', { id: 'inv_inline2', object: 'invoice' });
    await flushEvents(trx, fanOutAsWritten(app.clock));
    return written;
  });
  const event = await app.deps.db
    .selectFrom('events')
    .select(['fanned_out_at', 'pending_deliveries', 'delivered_at'])
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
  assert.equal(Number(event.pending_deliveries), 0);
  assert.ok(event.fanned_out_at !== null && event.delivered_at === event.fanned_out_at);
  assert.equal(await fanOutEvents(app.deps.db, app.clock, 100), 0);
});
