// Fan-out's PostgreSQL round trips: the worker's share of every provider event.
// Counted, not timed, from what the pool sent (db/pg-traffic.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ON_POSTGRES } from '../../../test/helpers/database.ts';
import { createCustomer, createWebhookEndpoint } from '../../../test/helpers/factories.ts';
import { startReceiver } from '../../../test/helpers/webhook-receiver.ts';
import { buildWebhookTestApp } from '../../../test/helpers/webhooks.ts';
import { fanOutEvents } from './webhooks.fan-out.ts';

/**
 * One pass that fans out events: look for work; BEGIN with the claim of the batch and the
 * endpoints (one statement); the deliveries with the events' marks (one statement, for up to
 * 500 deliveries and events that all got the same number of deliveries); COMMIT.
 */
const PASS_ROUND_TRIPS = 4;

test(
  'PostgreSQL: a fan-out pass takes PASS_ROUND_TRIPS round trips, whatever the number of events and endpoints',
  { skip: ON_POSTGRES ? false : 'counts PostgreSQL round trips; SQLite has none' },
  async (t) => {
    const app = await buildWebhookTestApp(t);
    const receiver = await startReceiver(t);
    await createWebhookEndpoint(app, receiver.url, { events: ['*'] });
    await createWebhookEndpoint(app, `${receiver.url}/b`, { events: ['customer.created'] });
    await fanOutEvents(app.deps.db, app.clock, 100);
    for (let i = 0; i < 3; i += 1) await createCustomer(app);
    const traffic = app.deps.database.traffic;
    const before = traffic.roundTrips;
    assert.equal(await fanOutEvents(app.deps.db, app.clock, 100), 3);
    assert.equal(traffic.roundTrips - before, PASS_ROUND_TRIPS);
    const deliveries = await app.deps.db.selectFrom('webhook_deliveries').select(['event_id', 'endpoint_id']).execute();
    assert.equal(deliveries.length, 6, 'each customer.created reaches both endpoints');
    const events = await app.deps.db
      .selectFrom('events')
      .select(['topic', 'pending_deliveries'])
      .where('topic', '=', 'customer.created')
      .execute();
    assert.deepEqual(
      events.map((event) => Number(event.pending_deliveries)),
      [2, 2, 2],
    );
    assert.equal(await fanOutEvents(app.deps.db, app.clock, 100), 0, 'nothing left to fan out');
  },
);
