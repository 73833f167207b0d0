// The webhook tables' one lock order (src/db/locking.ts): the API (retry, test, PATCH) and the
// worker recording attempts take endpoint before delivery, so under real concurrency on
// PostgreSQL they queue instead of deadlocking, and no request is answered 5xx.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { ON_POSTGRES, TEST_DATABASE_URL } from '../../../test/helpers/database.ts';
import { createCustomer, createWebhookEndpoint } from '../../../test/helpers/factories.ts';
import { answer, startReceiver } from '../../../test/helpers/webhook-receiver.ts';
import { buildWebhookTestApp } from '../../../test/helpers/webhooks.ts';
import { claimDueDeliveries, recordOutcomes } from './webhooks.delivery-leases.ts';
import { fanOutEvents } from './webhooks.fan-out.ts';

/** Resolves once another session waits for a lock `pid` holds. */
async function blockedBy(pid: number): Promise<void> {
  const probe = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await probe.connect();
  try {
    for (;;) {
      const { rows } = await probe.query(
        'select count(*)::int as n from pg_stat_activity where $1 = any(pg_blocking_pids(pid))',
        [pid],
      );
      if (rows[0].n > 0) return;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  } finally {
    await probe.end();
  }
}

test(
  'the worker records an attempt endpoint first: a transaction holding the endpoint can then lock the delivery',
  {
    skip: !ON_POSTGRES && "row locks are PostgreSQL's; SQLite runs one writer at a time",
  },
  async (t) => {
    const app = await buildWebhookTestApp(t);
    const { db } = app.deps;
    const receiver = await startReceiver(t, answer(500));
    const endpoint = await createWebhookEndpoint(app, receiver.url);
    await createCustomer(app);
    await fanOutEvents(db, app.clock, 10);
    const [delivery] = await claimDueDeliveries(db, app.clock, {
      limit: 1,
      fullEndpoints: [],
      room: new Map(),
      defaultRoom: 1,
      owner: 'worker-1',
      leaseMs: 60_000,
    });
    assert.ok(delivery);

    // What the API does (PATCH, retry): the endpoint, then the delivery.
    const api = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await api.connect();
    t.after(() => api.end());
    await api.query(`set search_path to ${app.deps.database.schema}`);
    await api.query('begin');
    await api.query('select id from webhook_endpoints where id = $1 for update', [endpoint.id]);
    const pid = (await api.query('select pg_backend_pid() as pid')).rows[0].pid as number;

    const recording = recordOutcomes(db, app.clock, { config: app.deps.config, random: () => 0.5 }, [
      {
        kind: 'attempt',
        delivery,
        owner: 'worker-1',
        attemptedAt: app.clock.now(),
        response: { statusCode: 500, retryAfter: undefined, body: null, error: null, aborted: false, durationMs: 1 },
      },
    ]).catch((error: unknown) => error);
    await blockedBy(pid); // the worker waits for the endpoint, holding nothing the API needs
    await api.query('select id from webhook_deliveries where id = $1 for update', [delivery.id]);
    await api.query('commit');
    assert.equal(await recording, undefined, 'recorded, not a deadlock victim');
    const [row] = await db.selectFrom('webhook_deliveries').selectAll().where('id', '=', delivery.id).execute();
    assert.equal(row!.attempt_count, 1);
  },
);

test('retry, test and PATCH in parallel with the worker recording attempts: every request is answered, none 5xx', async (t) => {
  const app = await buildWebhookTestApp(t, { env: { WEBHOOK_RETRY_SCHEDULE: '1h' } });
  // Failing answers: recording each attempt also writes the endpoint's failure streak.
  const receiver = await startReceiver(t, answer(500));
  const endpoints = [await createWebhookEndpoint(app, receiver.url), await createWebhookEndpoint(app, receiver.url)];
  for (let i = 0; i < 30; i++) await createCustomer(app);
  await app.dispatcher.runUntilIdle();
  const deliveries = new Map<string, string[]>();
  for (const endpoint of endpoints) {
    const res = await app.request('GET', `/api/webhooks/${endpoint.id}/deliveries?limit=100`);
    deliveries.set(
      endpoint.id,
      res.body.data.map((d: { id: string }) => d.id),
    );
  }

  app.dispatcher.start();
  const requests = Array.from({ length: 300 }, (_, i) => {
    const endpoint = endpoints[i % endpoints.length]!;
    const ids = deliveries.get(endpoint.id)!;
    switch (i % 5) {
      case 0:
        return app.request('POST', `/api/webhooks/${endpoint.id}/test`);
      case 1:
        return app.request('PATCH', `/api/webhooks/${endpoint.id}`, {
          body: { secret: `whsec-${i}-0123456789abcdef` },
        });
      default:
        return app.request('POST', `/api/webhooks/${endpoint.id}/deliveries/${ids[i % ids.length]}/retry`);
    }
  });
  const statuses = (await Promise.all(requests)).map((res) => `${res.status} ${res.status >= 500 ? res.text : ''}`);
  const failed = statuses.filter((s) => s.startsWith('5'));
  assert.deepEqual(failed, [], `${failed.length} of 300 answered 5xx`);
  // 202 or, for a delivery being sent right now, 422 invalid_state: nothing else.
  assert.deepEqual(
    statuses.filter((s) => !['200', '202', '422'].includes(s.slice(0, 3))),
    [],
  );
  assert.ok(receiver.requests.length > 12, 'the worker sent and recorded attempts meanwhile');
});
