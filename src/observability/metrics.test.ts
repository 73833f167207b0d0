// GET /metrics (SPEC §8): Prometheus text on its own port, request counts and latency by
// route pattern and status, and gauges read from the database at scrape time.
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { sql } from 'kysely';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import { createCustomer, createSubscription, createWebhookEndpoint } from '../../test/helpers/factories.ts';
import { SHARED_SCHEMA_COMPILERS } from '../../test/helpers/schema-compilers.ts';
import { startReceiver } from '../../test/helpers/webhook-receiver.ts';
import { buildWebhookTestApp } from '../../test/helpers/webhooks.ts';
import { fanOutEvents } from '../modules/webhooks/webhooks.fan-out.ts';
import { applyFailedPayment, applySuccessfulPayment } from '../billing/subscription-payments.ts';
import { buildApp } from '../app.ts';
import { type DatabaseGauge, Metrics, startMetricsServer } from './metrics.ts';

const silent = { warn: () => {} };

async function scrape(t: TestContext, metrics: Metrics): Promise<{ status: number; type: string; text: string }> {
  const server = await startMetricsServer(metrics, { host: '127.0.0.1', port: 0 });
  t.after(() => server.close());
  const res = await fetch(`${server.url}/metrics`);
  return { status: res.status, type: res.headers.get('content-type') ?? '', text: await res.text() };
}

/** The value of one sample line, e.g. `name{a="b"} 3` → 3; undefined when absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const wanted = Object.entries(labels).map(([key, value]) => `${key}="${value}"`);
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const have = (match[2] ?? '').split(',').filter(Boolean);
    if (wanted.every((pair) => have.includes(pair)) && have.length === wanted.length) return Number(match[3]);
  }
  return undefined;
}

test('GET /metrics on its own port: requests counted and timed by method, route pattern and status', async (t) => {
  const app = await buildTestApp(t);
  const customer = await createCustomer(app);
  await app.request('GET', '/api/customers');
  await app.request('GET', '/api/customers');
  await app.request('GET', `/api/customers/${customer.id}`);
  await app.request('GET', '/api/customers/cus_missing');
  await app.request('GET', '/no/such/route');
  await app.request('GET', '/api/customers', { key: null });
  await app.request('GET', '/api/health', { key: null }); // fence: earlier responses are recorded

  const { status, type, text } = await scrape(t, app.app.metrics);
  assert.equal(status, 200);
  assert.match(type, /^text\/plain; version=0\.0\.4/);
  const list = { method: 'GET', route: '/api/customers', status: '200' };
  assert.equal(sample(text, 'billing_http_requests_total', list), 2);
  assert.equal(sample(text, 'billing_http_request_duration_seconds_count', list), 2);
  assert.equal(sample(text, 'billing_http_request_duration_seconds_bucket', { ...list, le: '+Inf' }), 2);
  // Buckets are cumulative: the largest finite bound holds both responses, the smallest no more.
  assert.equal(sample(text, 'billing_http_request_duration_seconds_bucket', { ...list, le: '10' }), 2);
  assert.ok((sample(text, 'billing_http_request_duration_seconds_bucket', { ...list, le: '0.005' }) ?? -1) <= 2);
  assert.match(text, /# TYPE billing_http_request_duration_seconds histogram/);
  assert.match(text, /# TYPE billing_http_requests_total counter/);
  assert.ok((sample(text, 'billing_http_request_duration_seconds_sum', list) ?? -1) >= 0);
  const byId = { method: 'GET', route: '/api/customers/:id' };
  assert.equal(sample(text, 'billing_http_requests_total', { ...byId, status: '200' }), 1);
  assert.equal(sample(text, 'billing_http_requests_total', { ...byId, status: '404' }), 1);
  assert.equal(sample(text, 'billing_http_requests_total', { method: 'GET', route: 'unmatched', status: '404' }), 1);
  assert.equal(sample(text, 'billing_http_requests_total', { ...list, status: '401' }), 1);
  assert.equal(
    sample(text, 'billing_http_requests_total', { method: 'POST', route: '/api/customers', status: '201' }),
    1,
  );
  assert.ok(!text.includes('/no/such/route'), 'raw URLs never become labels');
});

test('the metrics port serves only GET /metrics, without an API key', async (t) => {
  const app = await buildTestApp(t);
  const server = await startMetricsServer(app.app.metrics, { host: '127.0.0.1', port: 0 });
  t.after(() => server.close());
  assert.equal((await fetch(`${server.url}/metrics`)).status, 200);
  assert.equal((await fetch(`${server.url}/api/customers`)).status, 404);
  assert.equal((await fetch(`${server.url}/metrics`, { method: 'POST' })).status, 404);
  // And the API port does not serve it.
  assert.equal((await app.request('GET', '/metrics')).status, 404);
});

test('database gauges are read at scrape time; a failing one shows NaN and the scrape still answers', async (t) => {
  const app = await buildTestApp(t);
  const customers: DatabaseGauge = {
    name: 'billing_test_customers',
    help: 'Customers, counted at scrape time.',
    labelNames: ['kind'],
    collect: async ({ db }) => {
      const row = await db
        .selectFrom('customers')
        .select(sql<number>`count(*)`.as('n'))
        .executeTakeFirstOrThrow();
      return [{ labels: { kind: 'all' }, value: Number(row.n) }];
    },
  };
  const broken: DatabaseGauge = {
    name: 'billing_test_broken',
    help: 'Reads a table that does not exist.',
    collect: async ({ db }) => {
      await sql`select * from no_such_table`.execute(db);
      return [{ value: 1 }];
    },
  };
  const warnings: string[] = [];
  const metrics = new Metrics(
    app.deps,
    { warn: (_o, message) => warnings.push(message) },
    { gauges: [customers, broken] },
  );

  assert.equal(sample((await scrape(t, metrics)).text, 'billing_test_customers', { kind: 'all' }), 0);
  await createCustomer(app);
  await createCustomer(app);
  const { status, text } = await scrape(t, metrics);
  assert.equal(status, 200);
  assert.equal(sample(text, 'billing_test_customers', { kind: 'all' }), 2);
  assert.ok(Number.isNaN(sample(text, 'billing_test_broken')), 'an unreadable gauge shows NaN, not a made-up 0');
  assert.ok(warnings.length > 0);
});

test('the built-in gauges: row totals and expired idempotency keys', async (t) => {
  const app = await buildTestApp(t);
  await createCustomer(app);
  const { text } = await scrape(t, app.app.metrics);
  assert.equal(sample(text, 'billing_rows', { table: 'customers' }), 1);
  assert.equal(sample(text, 'billing_idempotency_keys_expired'), 0);
});

test('queue and dunning gauges: pending and due deliveries, dunning cases by status and due actions', async (t) => {
  const app = await buildWebhookTestApp(t);
  const receiver = await startReceiver(t);
  await createWebhookEndpoint(app, receiver.url, { events: ['customer.created'] });
  const subscription = await createSubscription(app);
  await app.deps.db.transaction().execute((trx) => applySuccessfulPayment(trx, app.deps, subscription.id));
  await app.deps.db.transaction().execute((trx) => applyFailedPayment(trx, app.deps, subscription.id));
  await fanOutEvents(app.deps.db, app.clock, 100);

  const before = (await scrape(t, app.app.metrics)).text;
  assert.equal(sample(before, 'billing_webhook_deliveries_pending'), 1, 'the customer.created delivery');
  assert.equal(sample(before, 'billing_webhook_deliveries_due'), 1);
  assert.equal(sample(before, 'billing_provider_events_due'), 0);
  assert.equal(sample(before, 'billing_dunning_cases', { status: 'open' }), 1);
  assert.equal(sample(before, 'billing_dunning_cases', { status: 'recovered' }), 0);
  assert.equal(sample(before, 'billing_dunning_actions_due'), 0);

  await app.dispatcher.runUntilIdle();
  app.clock.advance(86_400_000);
  const after = (await scrape(t, app.app.metrics)).text;
  assert.equal(sample(after, 'billing_webhook_deliveries_pending'), 0);
  assert.equal(sample(after, 'billing_webhook_deliveries_due'), 0);
  assert.equal(sample(after, 'billing_dunning_actions_due'), 1, 'the first reminder is due a day later');
});

test('each app instance has its own registry (many apps in one process)', async (t) => {
  const first: TestApp = await buildTestApp(t);
  const second = await buildApp(first.deps, {
    metrics: new Metrics(first.deps, silent),
    schemaController: SHARED_SCHEMA_COMPILERS,
  });
  t.after(() => second.close());
  await first.request('GET', '/api/customers');
  await second.inject({ method: 'GET', url: '/api/health' });
  const one = (await scrape(t, first.app.metrics)).text;
  const two = (await scrape(t, second.metrics)).text;
  assert.equal(
    sample(one, 'billing_http_requests_total', { method: 'GET', route: '/api/health', status: '200' }),
    undefined,
  );
  assert.equal(sample(two, 'billing_http_requests_total', { method: 'GET', route: '/api/health', status: '200' }), 1);
  assert.equal(
    sample(two, 'billing_http_requests_total', { method: 'GET', route: '/api/customers', status: '200' }),
    undefined,
  );
});
