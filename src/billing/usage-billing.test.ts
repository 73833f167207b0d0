// Usage billed in arrears (SPEC §15), on both databases, through the real routes (meters and
// usage events through their services, the records this feature reads): a clock
// customer's usage over three advanced months bills three renewals with the previous
// month's usage lines (graduated tiers of calls, distinct users), late calls as an
// adjustment naming their month (`bill_next_invoice`), late users never (`drop`); the
// preview shows the current period's usage so far; plans refuse charges that cannot bill;
// and, over random event streams with duplicates and late events, what each period bills is
// the aggregate of its distinct events, late ones per their meter's policy.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import { ON_POSTGRES } from '../../test/helpers/database.ts';
import { createMeter } from '../modules/meters/meters.service.ts';
import type { CreateMeterInput } from '../modules/meters/meters.schemas.ts';
import { ingestUsageEvents } from '../modules/usage/usage.ingest.ts';
import { CLOCK_AWARE_JOBS } from '../worker/jobs.ts';
import { Worker } from '../worker/runner.ts';
import { advanceTestClocks } from '../worker/test-clocks.jobs.ts';

const ENV = { TEST_CLOCKS: 'true' };
const T0 = '2026-03-01T00:00:00.000Z';
const MINUTE = 60_000;

const failLog = { error: (object: object) => assert.fail(`worker job failed: ${String(Object.values(object)[0])}`) };

async function created(app: TestApp, path: string, body: Record<string, unknown>) {
  const res = await app.request('POST', path, { body });
  assert.equal(res.status, 201, `${path}: ${res.text}`);
  return res.body;
}

/** Advances `clockId` to `time` and runs the advance (renewals, finalizations) to the end. */
async function advance(app: TestApp, clockId: string, time: string) {
  const res = await app.request('POST', `/api/test-clocks/${clockId}/advance`, { body: { frozen_time: time } });
  assert.equal(res.status, 202, res.text);
  await new Worker(app.deps, [advanceTestClocks(CLOCK_AWARE_JOBS)], failLog).runOnce();
  const clock = (await app.request('GET', `/api/test-clocks/${clockId}`)).body;
  assert.deepEqual([clock.status, clock.frozen_time], ['ready', time]);
}

/** Ingests `events` (≤ 1,000) as POST /api/usage-events does, and expects each accepted. */
async function ingest(app: TestApp, events: Record<string, unknown>[]) {
  const results = await ingestUsageEvents(app.deps.db, app.deps.clock, events);
  assert.deepEqual(
    results.map((r) => r.status),
    events.map(() => 'accepted'),
    JSON.stringify(results),
  );
}

/** A meter, as POST /api/meters would create it. */
function newMeter(app: TestApp, input: CreateMeterInput) {
  return createMeter(app.deps.db, app.deps.clock, input);
}

let transaction = 0;

/** `count` calls of `customerId`, one a minute back from `at`. */
function calls(customerId: string, at: string, count: number) {
  return Array.from({ length: count }, (_, i) => ({
    transaction_id: `call-${(transaction += 1)}`,
    customer_id: customerId,
    event_name: 'api_call',
    timestamp: new Date(Date.parse(at) - i * MINUTE).toISOString(),
    properties: {},
  }));
}

function users(customerId: string, at: string, names: string[]) {
  return names.map((user, i) => ({
    transaction_id: `user-${(transaction += 1)}`,
    customer_id: customerId,
    event_name: 'active_user',
    timestamp: new Date(Date.parse(at) - i * MINUTE).toISOString(),
    properties: { user },
  }));
}

async function invoicesOf(app: TestApp, subscriptionId: string) {
  const res = await app.request('GET', `/api/invoices?subscription_id=${subscriptionId}&sort_order=asc&limit=100`);
  const detailed = [];
  for (const invoice of res.body.data) detailed.push((await app.request('GET', `/api/invoices/${invoice.id}`)).body);
  return detailed;
}

async function payOpen(app: TestApp, subscriptionId: string) {
  for (const invoice of await invoicesOf(app, subscriptionId)) {
    if (invoice.status !== 'open') continue;
    const paid = await app.request('POST', `/api/invoices/${invoice.id}/pay`, { body: { paid_out_of_band: true } });
    assert.equal(paid.status, 200, paid.text);
  }
}

/** The metered world: a clock, a calls meter (late events billed), a users meter (late events dropped), a plan charging both. */
async function meteredSubscription(app: TestApp) {
  const clock = await created(app, '/api/test-clocks', { frozen_time: T0, name: 'usage' });
  const callsMeter = await newMeter(app, {
    event_name: 'api_call',
    aggregation: 'count',
    display_name: 'API calls',
    late_events: 'bill_next_invoice',
  });
  const usersMeter = await newMeter(app, {
    event_name: 'active_user',
    aggregation: 'unique_count',
    unique_property: 'user',
    display_name: 'Active users',
    late_events: 'drop',
  });
  const plan = await created(app, '/api/plans', {
    name: 'Metered',
    amount: 5000,
    currency: 'NGN',
    interval: 'month',
    charges: [
      {
        meter_id: callsMeter.id,
        model: 'graduated',
        tiers: [
          { up_to: 10, unit_amount: 0 },
          { up_to: 100, unit_amount: 40 },
          { up_to: null, unit_amount_decimal: '2.5' },
        ],
      },
      { meter_id: usersMeter.id, model: 'standard', unit_amount: 1000 },
    ],
  });
  const customer = await created(app, '/api/customers', { email: 'metered@example.com', test_clock: clock.id });
  const subscription = await created(app, '/api/subscriptions', { customer_id: customer.id, plan_id: plan.id });
  await payOpen(app, subscription.id);
  return { clock, callsMeter, usersMeter, plan, customer, subscription };
}

const summary = (invoice: { lines: { kind: string; description: string; quantity: number; amount: number }[] }) =>
  invoice.lines.map((line) => [line.kind, line.description, line.quantity, line.amount]);

test("a clock customer's usage over three advanced months bills three renewals: last month's tiers and users, late calls adjusted, late users dropped", async (t) => {
  const app = await buildTestApp(t, { env: ENV });
  const { clock, callsMeter, plan, customer, subscription } = await meteredSubscription(app);
  assert.equal(plan.charges[1].unit_amount, 1000);
  assert.equal(plan.charges[0].tiers[2].unit_amount_decimal, '2.5');
  assert.equal(plan.charges[0].tiers[2].unit_amount, null);

  // March: 123 calls, users ana, bo, ana, chen (3 distinct).
  await advance(app, clock.id, '2026-03-15T00:00:00.000Z');
  await ingest(app, calls(customer.id, '2026-03-15T00:00:00.000Z', 123));
  await ingest(app, users(customer.id, '2026-03-15T00:00:00.000Z', ['ana', 'bo', 'ana', 'chen']));

  // The preview of the April renewal shows March so far.
  const preview = await app.request('POST', '/api/invoices/preview', { body: { subscription_id: subscription.id } });
  assert.equal(preview.status, 200, preview.text);
  assert.deepEqual(
    preview.body.lines.filter((l: { kind: string }) => l.kind === 'usage').map((l: { amount: number }) => l.amount),
    [0, 3600, 58, 3000],
  );

  await advance(app, clock.id, '2026-04-10T00:00:00.000Z');
  await payOpen(app, subscription.id);
  // April: 50 calls; late March: 4 calls (billed next), user dan (dropped).
  await ingest(app, calls(customer.id, '2026-04-10T00:00:00.000Z', 50));
  await ingest(app, calls(customer.id, '2026-03-20T00:00:00.000Z', 4));
  await ingest(app, users(customer.id, '2026-03-20T00:00:00.000Z', ['dan']));

  await advance(app, clock.id, '2026-05-10T00:00:00.000Z');
  await payOpen(app, subscription.id);
  // May: 5 calls (the free tier), users eve and fay.
  await ingest(app, calls(customer.id, '2026-05-10T00:00:00.000Z', 5));
  await ingest(app, users(customer.id, '2026-05-10T00:00:00.000Z', ['eve', 'fay']));

  await advance(app, clock.id, '2026-06-10T00:00:00.000Z');
  const invoices = await invoicesOf(app, subscription.id);
  assert.deepEqual(
    invoices.map((invoice) => [invoice.period_start, invoice.status]),
    [
      [T0, 'paid'],
      ['2026-04-01T00:00:00.000Z', 'paid'],
      ['2026-05-01T00:00:00.000Z', 'paid'],
      ['2026-06-01T00:00:00.000Z', 'open'],
    ],
  );
  assert.deepEqual(summary(invoices[0]), [['subscription', 'Metered × 1, 1 Mar 2026 – 1 Apr 2026', 1, 5000]]);
  assert.deepEqual(summary(invoices[1]), [
    ['subscription', 'Metered × 1, 1 Apr 2026 – 1 May 2026', 1, 5000],
    ['usage', 'API calls, Tier 1: 1 – 10 × 0.00', 10, 0],
    ['usage', 'API calls, Tier 2: 11 – 100 × 0.40', 90, 3600],
    // 23 × 2.5 = 57.5 → 58, rounded once.
    ['usage', 'API calls, Tier 3: 101 and above × 0.025', 23, 58],
    ['usage', 'Active users × 10.00', 3, 3000],
  ]);
  assert.equal(invoices[1].total, 5000 + 3600 + 58 + 3000);
  const march = invoices[1].lines[1];
  assert.deepEqual(
    [march.period_start, march.period_end, march.meter_id],
    [T0, '2026-04-01T00:00:00.000Z', callsMeter.id],
  );
  assert.deepEqual(summary(invoices[2]), [
    ['subscription', 'Metered × 1, 1 May 2026 – 1 Jun 2026', 1, 5000],
    // 127 calls now cost 0 + 3,600 + 27 × 2.5 = 67.5 → 68: 10 more than the 58 billed.
    ['adjustment', 'API calls, late usage of 1 Mar 2026 – 1 Apr 2026: 123 → 127 units', 1, 10],
    ['usage', 'API calls, Tier 1: 1 – 10 × 0.00', 10, 0],
    ['usage', 'API calls, Tier 2: 11 – 100 × 0.40', 40, 1600],
  ]);
  assert.equal(invoices[2].lines[1].period_start, T0);
  assert.deepEqual(summary(invoices[3]), [
    ['subscription', 'Metered × 1, 1 Jun 2026 – 1 Jul 2026', 1, 5000],
    ['usage', 'API calls, Tier 1: 1 – 10 × 0.00', 5, 0],
    ['usage', 'Active users × 10.00', 2, 2000],
  ]);

  const billed = await app.deps.db
    .selectFrom('billed_usage')
    .select(['meter_id', 'period_start', 'quantity', 'amount'])
    .orderBy('period_start')
    .orderBy('meter_id')
    .execute();
  const expected = [
    [callsMeter.id, T0, '127', 3668],
    [callsMeter.id, '2026-04-01T00:00:00.000Z', '50', 1600],
    [callsMeter.id, '2026-05-01T00:00:00.000Z', '5', 0],
  ];
  const callsRows = billed
    .filter((row) => row.meter_id === callsMeter.id)
    .map((row) => [row.meter_id, new Date(row.period_start).toISOString(), row.quantity, Number(row.amount)]);
  assert.deepEqual(callsRows, expected);
  // The dropped late user stays out: March is billed as 3 users.
  const usersRows = billed.filter((row) => row.meter_id !== callsMeter.id).map((row) => row.quantity);
  assert.deepEqual(usersRows, ['3', '0', '2']);

  // Deleting the clock takes what its subscription's usage billed with it.
  assert.equal((await app.request('DELETE', `/api/test-clocks/${clock.id}`)).status, 204);
  assert.equal((await app.deps.db.selectFrom('billed_usage').select('meter_id').execute()).length, 0);
});

test('plans refuse charges that cannot bill, naming the charge; charges are immutable', async (t) => {
  const app = await buildTestApp(t, { env: ENV });
  const meter = await newMeter(app, {
    event_name: 'api_call',
    aggregation: 'count',
    display_name: 'API calls',
  });
  const base = { name: 'Metered', amount: 0, currency: 'NGN', interval: 'month' };
  const cases: [unknown, RegExp][] = [
    [[{ meter_id: 'meter_01JD3Q7Z8X9Y0A1B2C3D4E5F6G', model: 'standard', unit_amount: 1 }], /no meter/],
    [[{ meter_id: 'nope', model: 'standard', unit_amount: 1 }], /no meter/],
    [[{ meter_id: meter.id, model: 'standard' }], /needs unit_amount/],
    [[{ meter_id: meter.id, model: 'standard', unit_amount: 1, unit_amount_decimal: '1' }], /not both/],
    [[{ meter_id: meter.id, model: 'standard', unit_amount_decimal: '0.1234567890123' }], /more than 12 decimals/],
    [[{ meter_id: meter.id, model: 'standard', unit_amount_decimal: '1e3' }], /not a non-negative decimal/],
    [[{ meter_id: meter.id, model: 'standard', unit_amount_decimal: '٣' }], /not a non-negative decimal/],
    [[{ meter_id: meter.id, model: 'package', unit_amount: 500 }], /package_size/],
    [[{ meter_id: meter.id, model: 'graduated', tiers: [{ up_to: 10, unit_amount: 1 }] }], /last has up_to null/],
    [
      [
        {
          meter_id: meter.id,
          model: 'volume',
          tiers: [
            { up_to: 100, unit_amount: 1 },
            { up_to: 50, unit_amount: 1 },
            { up_to: null, unit_amount: 1 },
          ],
        },
      ],
      /ascend/,
    ],
    [[{ meter_id: meter.id, model: 'graduated', tiers: [{ up_to: null }] }], /tier 1 needs unit_amount/],
    [
      [
        { meter_id: meter.id, model: 'standard', unit_amount: 1 },
        { meter_id: meter.id, model: 'standard', unit_amount: 2 },
      ],
      /charged twice/,
    ],
  ];
  for (const [charges, message] of cases) {
    const res = await app.request('POST', '/api/plans', { body: { ...base, charges } });
    assert.equal(res.status, 400, JSON.stringify(charges));
    assert.equal(res.body.code, 'validation_error');
    assert.match(res.body.message, message);
    assert.match(res.body.message, /charges\[\d\]/);
  }
  for (const bad of [
    { up_to: -1, unit_amount: 1 },
    { up_to: 1.5, unit_amount: 1 },
    { up_to: null, unit_amount: -1 },
  ]) {
    const res = await app.request('POST', '/api/plans', {
      body: { ...base, charges: [{ meter_id: meter.id, model: 'volume', tiers: [bad] }] },
    });
    assert.equal(res.status, 400, JSON.stringify(bad));
  }
  const list = await app.request('GET', '/api/plans');
  assert.equal(list.body.meta.total, 0, 'nothing was created');

  const plan = await created(app, '/api/plans', {
    ...base,
    charges: [
      { meter_id: meter.id, model: 'package', unit_amount_decimal: '500.5', package_size: 1000, free_units: 10 },
    ],
  });
  assert.deepEqual(plan.charges, [
    {
      meter_id: meter.id,
      model: 'package',
      unit_amount: null,
      unit_amount_decimal: '500.5',
      tiers: null,
      package_size: 1000,
      free_units: 10,
    },
  ]);
  const patch = await app.request('PATCH', `/api/plans/${plan.id}`, { body: { charges: [] } });
  assert.equal(patch.status, 400);
  assert.deepEqual((await app.request('GET', `/api/plans/${plan.id}`)).body.charges, plan.charges);
});

/** One event of a random stream: its transaction id (from a small pool: duplicates happen), minutes back from the batch's instant, a value. */
const eventArb = fc.record({
  key: fc.integer({ min: 0, max: 40 }),
  back: fc.integer({ min: 0, max: 14 * 24 * 60 }),
  n: fc.integer({ min: 0, max: 1000 }),
});
const streamArb = fc.record({
  march: fc.array(eventArb, { maxLength: 25 }),
  april: fc.array(eventArb, { maxLength: 25 }),
  // Received in April, timestamped in March's last two weeks: late.
  late: fc.array(eventArb, { maxLength: 10 }),
});

test('property: each period bills the aggregate of its distinct events; late events are adjusted (bill_next_invoice) or dropped (drop)', async (t) => {
  const app = await buildTestApp(t, { env: ENV });
  const countMeter = await newMeter(app, {
    event_name: 'call',
    aggregation: 'count',
    display_name: 'Calls',
    late_events: 'bill_next_invoice',
  });
  const sumMeter = await newMeter(app, {
    event_name: 'bytes',
    aggregation: 'sum',
    value_property: 'n',
    display_name: 'Bytes',
    late_events: 'drop',
  });
  const plan = await created(app, '/api/plans', {
    name: 'Metered',
    amount: 100,
    currency: 'NGN',
    interval: 'month',
    charges: [
      { meter_id: countMeter.id, model: 'standard', unit_amount: 7 },
      { meter_id: sumMeter.id, model: 'standard', unit_amount_decimal: '0.5' },
    ],
  });
  let run = 0;
  await fc.assert(
    fc.asyncProperty(streamArb, async (stream) => {
      run += 1;
      const clock = await created(app, '/api/test-clocks', { frozen_time: T0, name: `run ${run}` });
      const customer = await created(app, '/api/customers', { email: `p${run}@example.com`, test_clock: clock.id });
      const subscription = await created(app, '/api/subscriptions', { customer_id: customer.id, plan_id: plan.id });
      await payOpen(app, subscription.id);
      // The first event of a transaction id counts; a retry of it (any timestamp) never does.
      const seen = new Set<string>();
      const send = async (events: typeof stream.march, at: string, period: string) => {
        const batch = events.flatMap((e) => {
          const id = `${run}-${e.key}`;
          const body = {
            customer_id: customer.id,
            timestamp: new Date(Date.parse(at) - e.back * MINUTE).toISOString(),
          };
          return [
            { ...body, transaction_id: `c${id}`, event_name: 'call', properties: {} },
            { ...body, transaction_id: `b${id}`, event_name: 'bytes', properties: { n: e.n } },
          ];
        });
        const fresh = events.filter((e) => {
          const id = `${run}-${e.key}`;
          if (seen.has(id)) return false;
          seen.add(id);
          return true;
        });
        const results = await ingestUsageEvents(app.deps.db, app.deps.clock, batch);
        assert.ok(
          results.every((r) => r.status !== 'rejected'),
          JSON.stringify(results),
        );
        return { period, count: fresh.length, sum: fresh.reduce((total, e) => total + e.n, 0) };
      };
      await advance(app, clock.id, '2026-03-15T00:00:00.000Z');
      const march = await send(stream.march, '2026-03-15T00:00:00.000Z', 'march');
      await advance(app, clock.id, '2026-04-15T00:00:00.000Z');
      await payOpen(app, subscription.id);
      const april = await send(stream.april, '2026-04-15T00:00:00.000Z', 'april');
      const late = await send(stream.late, '2026-03-31T23:00:00.000Z', 'late');
      await advance(app, clock.id, '2026-05-02T00:00:00.000Z');

      const rows = await app.deps.db
        .selectFrom('billed_usage')
        .select(['meter_id', 'period_start', 'quantity', 'amount'])
        .where('subscription_id', '=', subscription.id)
        .execute();
      const billed = (meterId: string, start: string) =>
        rows.find((r) => r.meter_id === meterId && new Date(r.period_start).toISOString() === start)?.quantity;
      assert.equal(billed(countMeter.id, T0), String(march.count + late.count), 'calls of March, late ones billed');
      assert.equal(billed(sumMeter.id, T0), String(march.sum), 'bytes of March, late ones dropped');
      assert.equal(billed(countMeter.id, '2026-04-01T00:00:00.000Z'), String(april.count));
      assert.equal(billed(sumMeter.id, '2026-04-01T00:00:00.000Z'), String(april.sum));

      const invoices = await invoicesOf(app, subscription.id);
      assert.equal(invoices.length, 3);
      const usageOf = (invoice: (typeof invoices)[number], kind: string, meterId: string) =>
        invoice.lines
          .filter((l: { kind: string; meter_id?: string }) => l.kind === kind && l.meter_id === meterId)
          .reduce((sum: number, l: { amount: number }) => sum + l.amount, 0);
      assert.equal(usageOf(invoices[1], 'usage', countMeter.id), march.count * 7);
      // 0.5 a byte, rounded once, half away from zero.
      assert.equal(usageOf(invoices[1], 'usage', sumMeter.id), Math.round(march.sum / 2));
      assert.equal(usageOf(invoices[2], 'usage', countMeter.id), april.count * 7);
      assert.equal(usageOf(invoices[2], 'adjustment', countMeter.id), late.count * 7);
      assert.equal(usageOf(invoices[2], 'adjustment', sumMeter.id), 0);
    }),
    { numRuns: ON_POSTGRES ? 3 : 6 },
  );
});
