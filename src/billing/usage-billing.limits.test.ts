// Absurd usage values and prices (SPEC §15), on both databases: refused with a clear 4xx where
// they enter — event values a JSON number cannot carry exactly, NaN, Infinity, exponents;
// unit prices beyond 10¹² minor units — and an amount beyond 2⁵³ − 1 at a renewal is a typed
// AmountOutOfRangeError naming the charge, never a TypeError or a RangeError; a negative
// period (corrections) bills nothing.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import { createPlan, createSubscription } from '../../test/helpers/factories.ts';
import { invoicesOf } from '../../test/helpers/invoice-payments.ts';
import { transactionWithRetry } from '../db/transaction.ts';
import { createMeter } from '../modules/meters/meters.service.ts';
import { AmountOutOfRangeError } from './compose/errors.ts';
import { renewSubscription } from './renewals.ts';
import { applySuccessfulPayment } from './subscription-payments.ts';

const DAY = 86_400_000;

/** A sum meter of `n` bytes and an active subscription on a plan charging `unit` minor units a byte. */
async function bytesSubscription(app: TestApp, unit: number) {
  const meter = await createMeter(app.deps.db, app.deps.clock, {
    event_name: 'bytes',
    aggregation: 'sum',
    value_property: 'n',
    display_name: 'Bytes',
  });
  const plan = await createPlan(app, {
    name: 'Bytes',
    amount: 100,
    currency: 'NGN',
    charges: [{ meter_id: meter.id, model: 'standard', unit_amount: unit }],
  });
  const created = await createSubscription(app, { planId: plan.id });
  const sub = await app.deps.db.transaction().execute((trx) => applySuccessfulPayment(trx, app.deps, created.id));
  return { meter, plan, sub, start: Date.parse(sub.current_period_start!), end: Date.parse(sub.current_period_end!) };
}

/** POSTs one bytes event per value (as raw JSON text, so numbers arrive as a client wrote them); the results. */
async function sendValues(app: TestApp, customerId: string, values: string[], at: number) {
  const events = values.map(
    (value, i) =>
      `{"transaction_id":"v-${i}-${Math.random()}","customer_id":"${customerId}","event_name":"bytes","timestamp":"${new Date(at).toISOString()}","properties":{"n":${value}}}`,
  );
  const res = await app.request<{ data: { status: string; error?: { code: string } }[] }>('POST', '/api/usage-events', {
    rawBody: `{"events":[${events.join(',')}]}`,
    headers: { 'content-type': 'application/json' },
  });
  assert.equal(res.status, 202, res.text);
  const body = res.body;
  return body.data.map((r) => r.error?.code ?? r.status);
}

test('event values a JSON number cannot carry exactly, NaN, Infinity and exponents are rejected as invalid_value; the rest are accepted', async (t) => {
  const app = await buildTestApp(t);
  const { sub, start } = await bytesSubscription(app, 1);
  app.clock.set(new Date(start + DAY));
  const values = [
    '12345678901234567', // beyond 2⁵³ − 1: arrives as 12345678901234568
    '1e308',
    '1e21',
    '123456789.123456789', // 18 significant digits: arrives changed
    '"NaN"',
    '"Infinity"',
    '"-Infinity"',
    '"1e308"',
    '"1234567890123456789"', // 19 digits before the point
    '9007199254740991',
    '"999999999999999999"',
    '12.5',
    '-3',
  ];
  assert.deepEqual(await sendValues(app, sub.customer_id, values, start + DAY), [
    ...Array(9).fill('invalid_value'),
    'accepted',
    'accepted',
    'accepted',
    'accepted',
  ]);
});

test('unit prices beyond 10¹² minor units are refused when the plan is created, naming the charge', async (t) => {
  const app = await buildTestApp(t);
  const meter = await createMeter(app.deps.db, app.deps.clock, {
    event_name: 'api_call',
    aggregation: 'count',
    display_name: 'Calls',
  });
  const base = { name: 'Absurd', amount: 0, currency: 'NGN', interval: 'month' };
  for (const charge of [
    { model: 'standard', unit_amount_decimal: '1000000000000.5' },
    { model: 'standard', unit_amount_decimal: '99999999999999999999999999' },
    { model: 'package', unit_amount_decimal: '10000000000000', package_size: 10 },
    { model: 'graduated', tiers: [{ up_to: null, unit_amount_decimal: '5000000000000' }] },
  ]) {
    const res = await app.request('POST', '/api/plans', {
      body: { ...base, charges: [{ meter_id: meter.id, ...charge }] },
    });
    assert.equal(res.status, 400, JSON.stringify(charge));
    assert.match(res.body.message, /charges\[0\].*exceeds 1,000,000,000,000 minor units/);
  }
  const ok = await app.request('POST', '/api/plans', {
    body: { ...base, charges: [{ meter_id: meter.id, model: 'standard', unit_amount_decimal: '1000000000000' }] },
  });
  assert.equal(ok.status, 201, ok.text);
});

test('a usage renewal beyond 2⁵³ − 1 minor units fails with AmountOutOfRangeError naming the charge, issuing nothing', async (t) => {
  const app = await buildTestApp(t);
  const { meter, sub, start, end } = await bytesSubscription(app, 1000);
  app.clock.set(new Date(start + DAY));
  assert.deepEqual(await sendValues(app, sub.customer_id, ['"999999999999999999"'], start + DAY), ['accepted']);
  // The usage so far is refused as clearly.
  const usage = await app.request('GET', `/api/customers/${sub.customer_id}/usage`);
  assert.equal(usage.status, 400, usage.text);
  assert.equal(usage.body.code, 'validation_error');
  app.clock.set(new Date(end));
  const row = await app.deps.db
    .selectFrom('subscriptions')
    .selectAll()
    .where('id', '=', sub.id)
    .executeTakeFirstOrThrow();
  await assert.rejects(
    transactionWithRetry(app.deps.db, (trx) => renewSubscription(trx, app.deps, row)),
    (error: unknown) =>
      error instanceof AmountOutOfRangeError &&
      error.amount === 999999999999999999000n &&
      error.message.includes(`Bytes (${meter.id}, 999,999,999,999,999,999 units`) &&
      /exceeds 9007199254740991/.test(error.message),
  );
  assert.equal((await invoicesOf(app, sub.id)).length, 1);
});

test('a period whose values sum below zero bills nothing and its usage costs 0', async (t) => {
  const app = await buildTestApp(t);
  const { sub, start, end } = await bytesSubscription(app, 10);
  app.clock.set(new Date(start + DAY));
  assert.deepEqual(await sendValues(app, sub.customer_id, ['5', '-8'], start + DAY), ['accepted', 'accepted']);
  const usage = await app.request('GET', `/api/customers/${sub.customer_id}/usage`);
  assert.equal(usage.status, 200, usage.text);
  assert.deepEqual([usage.body.data[0].value, usage.body.data[0].amount], ['-3', 0]);
  app.clock.set(new Date(end));
  const row = await app.deps.db
    .selectFrom('subscriptions')
    .selectAll()
    .where('id', '=', sub.id)
    .executeTakeFirstOrThrow();
  await transactionWithRetry(app.deps.db, (trx) => renewSubscription(trx, app.deps, row));
  const renewal = (await invoicesOf(app, sub.id))[1]!;
  assert.deepEqual(
    renewal.lines.map((line) => line.kind),
    ['subscription'],
  );
});
