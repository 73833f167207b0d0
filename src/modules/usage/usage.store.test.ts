// The usage store (SPEC §15) below HTTP, on both databases: every aggregation over rollups
// (per minute, hour and day) and partial minutes, boundaries and late events, exact
// decimals, duplicates within and across batches.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';
import { createCustomer } from '../../../test/helpers/factories.ts';
import type { MeterAggregation } from '../../db/tables/usage.table.ts';
import { createMeter } from '../meters/meters.service.ts';
import { aggregateUsage } from './usage.aggregate.ts';
import { ingestionGroupStats, ingestUsageEvents } from './usage.ingest.ts';
import { coverRange } from './usage.store.ts';

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

/** One event of each test: its key suffix, timestamp (ISO 8601) and properties. */
interface EventRow {
  tx: string;
  ts: string;
  amount: string | number;
  user: string;
}

/**
 * Ingests `rows` into every meter of `meters` (the count meter without properties), keyed
 * `<meter name>-<tx>`; fails the test unless every event is accepted.
 */
async function sendToMeters(
  app: TestApp,
  customerId: string,
  meters: Record<string, { event_name: string }>,
  rows: readonly EventRow[],
): Promise<void> {
  for (const [name, m] of Object.entries(meters)) {
    const results = await ingestUsageEvents(
      app.deps.db,
      app.clock,
      rows.map((r) => ({
        transaction_id: `${name}-${r.tx}`,
        customer_id: customerId,
        event_name: m.event_name,
        timestamp: r.ts,
        properties: name === 'count' ? {} : { amount: r.amount, user: r.user },
      })),
    );
    assert.ok(
      results.every((r) => r.status === 'accepted'),
      JSON.stringify(results),
    );
  }
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
  await sendToMeters(app, customer.id, meters, rows);
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

test('a sum over many minutes stays exact: negative fractions, and totals past 64-bit integers', async (t) => {
  const app = await buildTestApp(t);
  const customer = await createCustomer(app);
  const sum = await meter(app, 'sum');
  // One event a minute (each its own rollup): SQLite adds whole parts and fractions apart and
  // must carry between them; twelve values near 10^18 overflow its 64-bit sum().
  const amounts = ['-0.5', '0.25', '-1.000000000001', '3', '-0.75', '999999999999999999.5'];
  const huge = Array.from({ length: 12 }, () => '999999999999999999.999999999999');
  const scaled = (text: string) => {
    const [whole, fraction = ''] = text.replace('-', '').split('.');
    const magnitude = BigInt(whole!) * 10n ** 12n + BigInt(fraction.padEnd(12, '0'));
    return text.startsWith('-') ? -magnitude : magnitude;
  };
  const text = (value: bigint) => {
    const magnitude = value < 0n ? -value : value;
    const fraction = (magnitude % 10n ** 12n).toString().padStart(12, '0').replace(/0+$/, '');
    const body = `${magnitude / 10n ** 12n}${fraction === '' ? '' : `.${fraction}`}`;
    return value < 0n ? `-${body}` : body;
  };
  const send = async (values: string[], first: number, tag: string) => {
    const results = await ingestUsageEvents(
      app.deps.db,
      app.clock,
      values.map((amount, i) => ({
        transaction_id: `${tag}-${i}`,
        customer_id: customer.id,
        event_name: sum.event_name,
        timestamp: at(first + i, 7),
        properties: { amount },
      })),
    );
    assert.ok(
      results.every((r) => r.status === 'accepted'),
      JSON.stringify(results),
    );
  };
  await send(amounts, 10, 'small');
  await send(huge, 20, 'huge');
  const value = (from: string, to: string) =>
    aggregateUsage(app.deps.db, { customer_id: customer.id, meter_id: sum.id, from, to });
  const small = amounts.slice(0, 5).reduce((total, a) => total + scaled(a), 0n);
  assert.equal(await value(at(10), at(15)), text(small));
  assert.equal(text(small), '0.999999999999');
  assert.equal(await value(at(10), at(14)), text(small - scaled('-0.75')));
  const all = [...amounts, ...huge].reduce((total, a) => total + scaled(a), 0n);
  assert.equal(await value(at(0), at(40)), text(all));
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

test('requests in flight are written as one group: a key shared across them is accepted once, a bad event refused alone', async (t) => {
  const app = await buildTestApp(t);
  const customer = await createCustomer(app);
  const m = await meter(app, 'sum');
  const event = (tx: string, amount: number) => ({
    transaction_id: tx,
    customer_id: customer.id,
    event_name: m.event_name,
    timestamp: at(60),
    properties: { amount },
  });
  const before = ingestionGroupStats(app.deps.db);
  // Request k sends keys k and k + 1 (amount = key): keys 0…6 are each sent once or twice.
  const requests: unknown[][] = [0, 1, 2, 3, 4, 5].map((k) => [event(`k${k}`, k), event(`k${k + 1}`, k + 1)]);
  requests[2]!.push({ ...event('bad', 1), properties: { amount: 'NaN' } });
  const results = await Promise.all(requests.map((events) => ingestUsageEvents(app.deps.db, app.clock, events)));
  const after = ingestionGroupStats(app.deps.db);
  assert.deepEqual(
    { groups: after.groups - before.groups, items: after.items - before.items },
    { groups: 1, items: 6 },
  );
  const statuses = results.map((r) => r.map((x) => x.status));
  // In submission order: the first request to carry a key keeps it.
  assert.deepEqual(statuses, [
    ['accepted', 'accepted'],
    ['duplicate', 'accepted'],
    ['duplicate', 'accepted', 'rejected'],
    ['duplicate', 'accepted'],
    ['duplicate', 'accepted'],
    ['duplicate', 'accepted'],
  ]);
  const total = await aggregateUsage(app.deps.db, {
    customer_id: customer.id,
    meter_id: m.id,
    from: at(0),
    to: at(120),
  });
  assert.equal(total, String(0 + 1 + 2 + 3 + 4 + 5 + 6));
});

test('coverRange: every instant of [from, to) in exactly one range, each level in whole buckets, the coarsest that fit', () => {
  const sizes = [60_000, 3_600_000, 86_400_000];
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 4 * 86_400_000 }),
      fc.integer({ min: 1, max: 40 * 86_400_000 }),
      (offset, length) => {
        const from = Date.parse('2026-01-30T00:00:00.000Z') + offset;
        const to = from + length;
        const { events, buckets } = coverRange(from, to, sizes);
        const all = [...events, ...buckets.flat()].sort((a, b) => a[0] - b[0]);
        assert.equal(all[0]![0], from);
        assert.equal(all.at(-1)![1], to);
        for (let i = 1; i < all.length; i++) assert.equal(all[i]![0], all[i - 1]![1]);
        for (const [level, ranges] of buckets.entries()) {
          for (const [a, b] of ranges) {
            assert.ok(a < b && a % sizes[level]! === 0 && b % sizes[level]! === 0);
            // Never a whole bucket of the next size left at this level.
            const next = sizes[level + 1];
            if (next) assert.ok(Math.ceil(a / next) * next + next > b);
          }
        }
        for (const [a, b] of events) assert.ok(b - a < sizes[0]!);
        assert.ok(events.length <= 2 && buckets.every((ranges, level) => level === 2 || ranges.length <= 2));
      },
    ),
  );
});

test('hourly and daily rollups: events straddling minute, hour, day and month boundaries, late events after a read', async (t) => {
  const app = await buildTestApp(t);
  app.clock.set(new Date('2026-02-02T00:00:00.000Z'));
  const customer = await createCustomer(app);
  const meters = {
    count: await meter(app, 'count'),
    sum: await meter(app, 'sum'),
    max: await meter(app, 'max'),
    last: await meter(app, 'last'),
    unique_count: await meter(app, 'unique_count'),
  };
  const send = (rows: EventRow[]) => sendToMeters(app, customer.id, meters, rows);
  // January's last instant, February's first, and a day and an hour later.
  await send([
    { tx: 'a', ts: '2026-01-30T12:00:00.000Z', amount: '0.1', user: 'u1' },
    { tx: 'b', ts: '2026-01-31T23:59:59.999Z', amount: '0.2', user: 'u2' },
    { tx: 'c', ts: '2026-02-01T00:00:00.000Z', amount: '-0.05', user: 'u1' },
    { tx: 'd', ts: '2026-02-01T01:00:00.000Z', amount: '7', user: 'u3' },
  ]);
  const values = async (from: string, to: string) => {
    const out: Record<string, string> = {};
    for (const [name, m] of Object.entries(meters)) {
      out[name] = await aggregateUsage(app.deps.db, { customer_id: customer.id, meter_id: m.id, from, to });
    }
    return out;
  };
  // Whole days (daily rollups), a month's edge (hours and minutes), a period not on any boundary.
  assert.deepEqual(await values('2026-01-30T00:00:00.000Z', '2026-02-02T00:00:00.000Z'), {
    count: '4',
    sum: '7.25',
    max: '7',
    last: '7',
    unique_count: '3',
  });
  assert.deepEqual(await values('2026-01-31T00:00:00.000Z', '2026-02-01T00:00:00.000Z'), {
    count: '1',
    sum: '0.2',
    max: '0.2',
    last: '0.2',
    unique_count: '1',
  });
  assert.deepEqual(await values('2026-01-30T11:59:59.999Z', '2026-02-01T00:00:00.001Z'), {
    count: '3',
    sum: '0.25',
    max: '0.2',
    last: '-0.05',
    unique_count: '2',
  });
  assert.deepEqual(await values('2026-02-01T00:00:00.001Z', '2026-02-01T01:00:00.000Z'), {
    count: '0',
    sum: '0',
    max: '0',
    last: '0',
    unique_count: '0',
  });
  // Late events into buckets already read: the same day, hour and minute as stored ones, and a
  // tie on the instant of `c` that wins `last` by its transaction id.
  await send([
    { tx: 'e', ts: '2026-01-30T12:00:30.000Z', amount: '100', user: 'u4' },
    { tx: 'z', ts: '2026-02-01T00:00:00.000Z', amount: '0.5', user: 'u2' },
  ]);
  assert.deepEqual(await values('2026-01-30T00:00:00.000Z', '2026-02-02T00:00:00.000Z'), {
    count: '6',
    sum: '107.75',
    max: '100',
    last: '7',
    unique_count: '4',
  });
  assert.deepEqual(await values('2026-01-31T00:00:00.000Z', '2026-02-01T01:00:00.000Z'), {
    count: '3',
    sum: '0.65',
    max: '0.5',
    last: '0.5',
    unique_count: '2',
  });
  // The three levels agree with each other: a day's count is its hours' and its minutes'.
  const total = async (table: 'usage_rollups' | 'usage_rollups_hourly' | 'usage_rollups_daily') =>
    Number(
      (
        await app.deps.db
          .selectFrom(table)
          .select((eb) => eb.fn.sum<number | string>('event_count').as('n'))
          .where('meter_id', '=', meters.count.id)
          .executeTakeFirst()
      )?.n,
    );
  assert.deepEqual(
    [await total('usage_rollups'), await total('usage_rollups_hourly'), await total('usage_rollups_daily')],
    [6, 6, 6],
  );
});
