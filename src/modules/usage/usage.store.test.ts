// The usage store (SPEC §15) below HTTP, on both databases: every aggregation over rollups
// and partial minutes, exact decimals, duplicates within and across batches.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';
import { createCustomer } from '../../../test/helpers/factories.ts';
import type { MeterAggregation } from '../../db/tables/usage.table.ts';
import { createMeter } from '../meters/meters.service.ts';
import { aggregateUsage } from './usage.aggregate.ts';
import { ingestUsageEvents } from './usage.ingest.ts';

let meterSequence = 0;

async function meter(app: TestApp, aggregation: MeterAggregation) {
  meterSequence += 1;
  return createMeter(app.deps.db, app.clock, {
    event_name: `ev_${aggregation}_${meterSequence}`,
    aggregation,
    display_name: aggregation,
    ...(aggregation === 'unique_count'
      ? { unique_property: 'user' }
      : aggregation === 'count'
        ? {}
        : { value_property: 'amount' }),
  });
}

const at = (minute: number, second = 0, ms = 0) =>
  new Date(Date.parse('2026-01-15T09:00:00.000Z') + minute * 60_000 + second * 1000 + ms).toISOString();

test('every aggregation over whole minutes and partial ones, exact decimals', async (t) => {
  const app = await buildTestApp(t);
  const customer = await createCustomer(app);
  const meters = {
    count: await meter(app, 'count'),
    sum: await meter(app, 'sum'),
    max: await meter(app, 'max'),
    last: await meter(app, 'last'),
    unique_count: await meter(app, 'unique_count'),
  };
  // Minute 1 at :10 and :50, minute 2 at :00, minute 3 at :30; 0.1 + 0.2 must be 0.3.
  const rows = [
    { tx: 'a', ts: at(1, 10), amount: '0.1', user: 'u1' },
    { tx: 'b', ts: at(1, 50), amount: 0.2, user: 'u2' },
    { tx: 'c', ts: at(2, 0), amount: '100000000000000000.000000000001', user: 'u1' },
    { tx: 'd', ts: at(3, 30), amount: '-5', user: 'u3' },
  ];
  for (const [name, m] of Object.entries(meters)) {
    const results = await ingestUsageEvents(
      app.deps.db,
      app.clock,
      rows.map((r) => ({
        transaction_id: `${name}-${r.tx}`,
        customer_id: customer.id,
        event_name: m.event_name,
        timestamp: r.ts,
        properties: name === 'count' ? {} : { amount: r.amount, user: r.user },
      })),
    );
    assert.deepEqual(
      results.map((r) => r.status),
      ['accepted', 'accepted', 'accepted', 'accepted'],
      JSON.stringify(results),
    );
  }
  const value = (m: { id: string }, from: string, to: string) =>
    aggregateUsage(app.deps.db, { customer_id: customer.id, meter_id: m.id, from, to });
  // Whole range: rollups only, edges only, and mixed.
  for (const [from, to] of [
    [at(0), at(10)],
    [at(1, 5), at(3, 31)],
    [at(1, 10), at(3, 30, 1)],
  ] as const) {
    assert.equal(await value(meters.count, from, to), '4', `${from} ${to}`);
    assert.equal(await value(meters.sum, from, to), '99999999999999995.300000000001', `${from} ${to}`);
    assert.equal(await value(meters.max, from, to), '100000000000000000.000000000001');
    assert.equal(await value(meters.last, from, to), '-5');
    assert.equal(await value(meters.unique_count, from, to), '3');
  }
  // [from, to): the event at `to` is out, the one at `from` in.
  assert.equal(await value(meters.count, at(1, 10), at(3, 30)), '3');
  assert.equal(await value(meters.sum, at(1, 10), at(2, 0)), '0.3');
  assert.equal(await value(meters.last, at(0), at(2, 30)), '100000000000000000.000000000001');
  assert.equal(await value(meters.unique_count, at(1, 11), at(3, 0)), '2');
  assert.equal(await value(meters.sum, at(5), at(6)), '0');
  assert.equal(await value(meters.max, at(5), at(6)), '0');
  assert.equal(await value(meters.count, at(6), at(5)), '0');
});

test('duplicates within a batch and across batches are acknowledged and counted once', async (t) => {
  const app = await buildTestApp(t);
  const customer = await createCustomer(app, { external_id: 'acct-ü-1' });
  const m = await meter(app, 'sum');
  const event = (tx: string, amount: number, customerRef = customer.id) => ({
    transaction_id: tx,
    customer_id: customerRef,
    event_name: m.event_name,
    timestamp: at(60),
    properties: { amount },
  });
  const first = await ingestUsageEvents(app.deps.db, app.clock, [event('x', 1), event('x', 100), event('y', 2)]);
  assert.deepEqual(
    first.map((r) => r.status),
    ['accepted', 'duplicate', 'accepted'],
  );
  const again = await ingestUsageEvents(app.deps.db, app.clock, [event('y', 50, 'acct-ü-1'), event('z', 4)]);
  assert.deepEqual(
    again.map((r) => r.status),
    ['duplicate', 'accepted'],
  );
  const total = await aggregateUsage(app.deps.db, {
    customer_id: customer.id,
    meter_id: m.id,
    from: at(0),
    to: at(120),
  });
  assert.equal(total, '7');
});
