// Meters and usage over HTTP (SPEC §15), on both databases: meters' rules, ingestion's
// per-event results (one bad event never refuses the others), duplicates, the time window
// by the customer's clock (a test clock's too), external ids, the list and a customer's usage.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import { createCustomer, createSubscription } from '../../test/helpers/factories.ts';

const NOW = '2026-01-15T10:00:00.000Z';
const minutesAgo = (m: number) => new Date(Date.parse(NOW) - m * 60_000).toISOString();

async function sumMeter(app: TestApp, event_name = 'tokens_used') {
  const res = await app.request('POST', '/api/meters', {
    body: { event_name, aggregation: 'sum', value_property: 'tokens', display_name: 'Tokens' },
  });
  assert.equal(res.status, 201, res.text);
  return res.body;
}

test('meters: created with their rules, unique event_name, only display_name changes', async (t) => {
  const app = await buildTestApp(t);
  const meter = await sumMeter(app);
  assert.match(meter.id, /^meter_[0-9A-Z]{26}$/);
  assert.equal(meter.late_events, 'bill_next_invoice');
  assert.equal(meter.unique_property, null);
  const again = await app.request('POST', '/api/meters', {
    body: { event_name: 'tokens_used', aggregation: 'count', display_name: 'Again' },
  });
  assert.equal(again.status, 409);
  assert.equal(again.body.code, 'conflict');
  for (const body of [
    { event_name: 'a', aggregation: 'sum', display_name: 'x' },
    { event_name: 'b', aggregation: 'count', value_property: 'v', display_name: 'x' },
    { event_name: 'c', aggregation: 'unique_count', value_property: 'v', display_name: 'x' },
    { event_name: 'd', aggregation: 'median', display_name: 'x' },
    { event_name: '', aggregation: 'count', display_name: 'x' },
    { event_name: 'e'.repeat(256), aggregation: 'count', display_name: 'x' },
    { event_name: 'f', aggregation: 'count', display_name: 'x', late_events: 'ignore' },
  ]) {
    const res = await app.request('POST', '/api/meters', { body });
    assert.equal(res.status, 400, JSON.stringify(body));
  }
  const renamed = await app.request('PATCH', `/api/meters/${meter.id}`, { body: { display_name: 'AI tokens 🤖' } });
  assert.equal(renamed.status, 200);
  assert.equal(renamed.body.display_name, 'AI tokens 🤖');
  const immutable = await app.request('PATCH', `/api/meters/${meter.id}`, { body: { aggregation: 'max' } });
  assert.equal(immutable.status, 400);
  assert.equal((await app.request('GET', `/api/meters/${meter.id}`)).body.aggregation, 'sum');
  assert.equal((await app.request('GET', '/api/meters/meter_nope')).status, 404);
  const list = await app.request('GET', '/api/meters?event_name=tokens_used');
  assert.equal(list.body.meta.total, 1);
  assert.equal(list.body.data[0].id, meter.id);
});

test('ingestion: a result per event, duplicates acknowledged once, the window by the customer clock', async (t) => {
  const app = await buildTestApp(t);
  const meter = await sumMeter(app);
  const customer = await createCustomer(app, { external_id: 'acct-42' });
  const event = (transaction_id: string, extra: Record<string, unknown> = {}) => ({
    transaction_id,
    customer_id: customer.id,
    event_name: meter.event_name,
    timestamp: minutesAgo(1),
    properties: { tokens: 10 },
    ...extra,
  });
  const res = await app.request('POST', '/api/usage-events', {
    body: {
      events: [
        event('t1'),
        event('t2', { customer_id: 'acct-42', properties: { tokens: '2.5' } }),
        event('t1'),
        event('t3', { customer_id: 'nobody' }),
        event('t4', { event_name: 'unmetered' }),
        event('t5', { timestamp: minutesAgo(35 * 24 * 60 + 1) }),
        event('t6', { timestamp: new Date(Date.parse(NOW) + 6 * 60_000).toISOString() }),
        event('t7', { properties: { tokens: '1e3' } }),
        event('t8', { properties: { other: 1 } }),
        event('t9', { timestamp: '2026-02-30T00:00:00Z' }),
        event('x'.repeat(256)),
        'not an object',
        event('t10', { timestamp: minutesAgo(35 * 24 * 60 - 1), properties: { tokens: 0.1 } }),
        event('t11', { timestamp: new Date(Date.parse(NOW) + 4 * 60_000).toISOString(), properties: { tokens: 0.2 } }),
      ],
    },
  });
  assert.equal(res.status, 202, res.text);
  const outcome = res.body.data.map((r: any) => r.error?.code ?? r.status);
  assert.deepEqual(outcome, [
    'accepted',
    'accepted',
    'duplicate',
    'customer_not_found',
    'meter_not_found',
    'timestamp_too_old',
    'timestamp_in_future',
    'invalid_value',
    'invalid_value',
    'invalid_event',
    'invalid_event',
    'invalid_event',
    'accepted',
    'accepted',
  ]);
  assert.deepEqual([res.body.accepted, res.body.duplicates, res.body.rejected], [4, 1, 9]);
  assert.match(res.body.data[0].id, /^uev_/);
  // A retry of the whole request: nothing new.
  const single = await app.request('POST', '/api/usage-events', { body: event('t2', { properties: { tokens: 999 } }) });
  assert.equal(single.status, 202);
  assert.equal(single.body.data[0].status, 'duplicate');
  const usage = await app.request(
    'GET',
    `/api/customers/${customer.id}/usage?from=${minutesAgo(60 * 24 * 40)}&to=${minutesAgo(-10)}`,
  );
  assert.equal(usage.status, 200, usage.text);
  assert.deepEqual(usage.body.data, [
    { meter_id: meter.id, value: '12.8', period_start: minutesAgo(60 * 24 * 40), period_end: minutesAgo(-10) },
  ]);
  const listed = await app.request('GET', `/api/usage-events?customer_id=${customer.id}&transaction_id=t2`);
  assert.equal(listed.body.meta.total, 1);
  assert.deepEqual(listed.body.data[0].properties, { tokens: '2.5' });
  assert.equal(listed.body.data[0].received_at, NOW);
});

test('ingestion: bad requests as a whole are 400 and store nothing', async (t) => {
  const app = await buildTestApp(t);
  const meter = await sumMeter(app);
  const customer = await createCustomer(app);
  const event = { transaction_id: 'a', customer_id: customer.id, event_name: meter.event_name, timestamp: NOW };
  for (const body of [
    { events: [] },
    { events: Array.from({ length: 1001 }, (_, i) => ({ ...event, transaction_id: `t${i}` })) },
    { events: [event], transaction_id: 'b' },
    { ...event, extra: 1 },
    { events: [{ ...event, transaction_id: 'nul\u0000' }] },
  ]) {
    const res = await app.request('POST', '/api/usage-events', { body });
    assert.equal(res.status, 400, JSON.stringify(body).slice(0, 100));
  }
  const listed = await app.request('GET', '/api/usage-events');
  assert.equal(listed.body.meta.total, 0);
  assert.equal((await app.request('GET', '/api/usage-events?from=yesterday')).status, 400);
  assert.equal((await app.request(`GET`, `/api/customers/${customer.id}/usage?to=2026-13-01T00:00:00Z`)).status, 400);
  assert.equal((await app.request(`GET`, `/api/customers/cus_nope/usage`)).status, 404);
  assert.equal((await app.request(`GET`, `/api/customers/${customer.id}/usage?meter_id=meter_nope`)).status, 404);
});

test('usage of a test clock customer is timestamped in clock time; the default period is the subscription’s', async (t) => {
  const app = await buildTestApp(t, { env: { TEST_CLOCKS: 'true' } });
  const meter = await sumMeter(app);
  const clockRes = await app.request('POST', '/api/test-clocks', { body: { frozen_time: '2030-06-01T00:00:00.000Z' } });
  assert.equal(clockRes.status, 201, clockRes.text);
  const customer = await createCustomer(app, { test_clock: clockRes.body.id });
  const sub = await createSubscription(app, { customerId: customer.id });
  const send = (transaction_id: string, timestamp: string) =>
    app.request('POST', '/api/usage-events', {
      body: {
        transaction_id,
        customer_id: customer.id,
        event_name: meter.event_name,
        timestamp,
        properties: { tokens: 5 },
      },
    });
  // Real time is 2026: an event then is years too old for the clock customer.
  assert.equal((await send('old', NOW)).body.data[0].error.code, 'timestamp_too_old');
  const inClock = await send('ok', '2030-06-01T00:00:00.000Z');
  assert.equal(inClock.body.data[0].status, 'accepted');
  const usage = await app.request('GET', `/api/customers/${customer.id}/usage`);
  assert.equal(usage.status, 200, usage.text);
  assert.equal(usage.body.data[0].value, '5');
  assert.equal(usage.body.data[0].period_start, sub.current_period_start);
  assert.equal(usage.body.data[0].period_end, sub.current_period_end);
  const listed = await app.request('GET', `/api/usage-events?customer_id=${customer.id}`);
  assert.equal(listed.body.data[0].received_at, '2030-06-01T00:00:00.000Z');
});

test('customers: external_id is unique among live customers, settable and clearable', async (t) => {
  const app = await buildTestApp(t);
  const a = await createCustomer(app, { external_id: 'ext-1' });
  assert.equal(a.external_id, 'ext-1');
  const clash = await app.request('POST', '/api/customers', { body: { email: 'b@example.com', external_id: 'ext-1' } });
  assert.equal(clash.status, 409);
  assert.match(clash.body.message, /external_id/);
  const b = await createCustomer(app);
  const patchClash = await app.request('PATCH', `/api/customers/${b.id}`, { body: { external_id: 'ext-1' } });
  assert.equal(patchClash.status, 409);
  assert.equal(
    (await app.request('PATCH', `/api/customers/${a.id}`, { body: { external_id: null } })).body.external_id,
    null,
  );
  const moved = await app.request('PATCH', `/api/customers/${b.id}`, { body: { external_id: 'ext-1' } });
  assert.equal(moved.status, 200);
  assert.equal(moved.body.external_id, 'ext-1');
  const long = await app.request('PATCH', `/api/customers/${b.id}`, { body: { external_id: 'x'.repeat(256) } });
  assert.equal(long.status, 400);
  const nul = await app.request('PATCH', `/api/customers/${b.id}`, { body: { external_id: 'a\u0000b' } });
  assert.equal(nul.status, 400);
});
