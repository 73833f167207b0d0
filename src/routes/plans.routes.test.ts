import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp } from '../../test/helpers/app.ts';
import { createPlan } from '../../test/helpers/factories.ts';

const UNKNOWN_PLAN = 'plan_01JD3Q7Z8X9Y0A1B2C3D4E5F6G';

test('create returns 201 with the plan and defaults interval_count 1, trial 0, active true', async (t) => {
  const { request } = await buildTestApp(t);
  const res = await request('POST', '/api/plans', {
    body: { name: 'Pro monthly', amount: 5000, currency: 'NGN', interval: 'month' },
  });
  assert.equal(res.status, 201);
  assert.match(res.body.id, /^plan_[0-9A-Z]{26}$/);
  assert.deepEqual(res.body, {
    id: res.body.id,
    name: 'Pro monthly',
    amount: 5000,
    currency: 'NGN',
    interval: 'month',
    interval_count: 1,
    trial_period_days: 0,
    active: true,
    tax_rate_ids: [],
    charges: [],
    metadata: {},
    created_at: '2026-01-15T10:00:00.000Z',
    updated_at: '2026-01-15T10:00:00.000Z',
  });
  assert.deepEqual((await request('GET', `/api/plans/${res.body.id}`)).body, res.body);
});

test('create keeps the given interval_count, trial_period_days and metadata', async (t) => {
  const { request } = await buildTestApp(t);
  const res = await request('POST', '/api/plans', {
    body: {
      name: 'Quarterly',
      amount: 0,
      currency: 'USD',
      interval: 'week',
      interval_count: 13,
      trial_period_days: 14,
      metadata: { tier: 'gold' },
    },
  });
  assert.equal(res.status, 201);
  assert.equal(res.body.amount, 0);
  assert.equal(res.body.interval, 'week');
  assert.equal(res.body.interval_count, 13);
  assert.equal(res.body.trial_period_days, 14);
  assert.deepEqual(res.body.metadata, { tier: 'gold' });
});

test('create rejects missing or bad fields with 400 sentences naming the field, and stores nothing', async (t) => {
  const { request } = await buildTestApp(t);
  const valid = { name: 'P', amount: 5000, currency: 'NGN', interval: 'month' };
  const without = (field: keyof typeof valid) => {
    const { [field]: _dropped, ...rest } = valid;
    return rest;
  };
  const cases: [unknown, string, string][] = [
    [without('name'), 'name', 'Name is required'],
    [without('amount'), 'amount', 'Amount is required'],
    [without('currency'), 'currency', 'Currency is required'],
    [without('interval'), 'interval', 'Interval is required'],
    [{ ...valid, name: '' }, 'name', 'name must not be empty'],
    [{ ...valid, amount: -1 }, 'amount', 'amount must be at least 0'],
    [{ ...valid, amount: 10.5 }, 'amount', 'amount must be an integer'],
    [{ ...valid, amount: '5000' }, 'amount', 'amount must be an integer'],
    [{ ...valid, currency: 'usd' }, 'currency', 'currency must be an ISO 4217 code such as NGN or USD (got "usd")'],
    [{ ...valid, currency: 'NGNX' }, 'currency', 'currency must be at most 3 characters'],
    [{ ...valid, currency: 'XYZ' }, 'currency', 'currency must be an ISO 4217 code such as NGN or USD (got "XYZ")'],
    [{ ...valid, interval: 'fortnight' }, 'interval', 'interval must be one of: day, week, month, year'],
    [{ ...valid, interval_count: 0 }, 'interval_count', 'interval_count must be at least 1'],
    [{ ...valid, trial_period_days: -1 }, 'trial_period_days', 'trial_period_days must be at least 0'],
    [{ ...valid, active: false }, 'active', 'active is not a known field'],
  ];
  for (const [body, field, message] of cases) {
    const res = await request('POST', '/api/plans', { body });
    assert.equal(res.status, 400, JSON.stringify(body));
    assert.equal(res.body.code, 'validation_error');
    assert.equal(res.body.message, message, JSON.stringify(body));
    assert.equal(res.body.detail, message);
    assert.deepEqual(res.body.errors, [{ name: field, reason: message }]);
    assert.doesNotMatch(res.text, /#\/|FST_ERR|properties/);
  }
  assert.equal((await request('GET', '/api/plans')).body.meta.total, 0);
});

test('interval_count is at most three years per period: day 1095, week 156, month 36, year 3; more is 400', async (t) => {
  const { request } = await buildTestApp(t);
  const base = { name: 'P', amount: 5000, currency: 'NGN' };
  for (const [interval, max] of [
    ['day', 1095],
    ['week', 156],
    ['month', 36],
    ['year', 3],
  ] as const) {
    const over = await request('POST', '/api/plans', { body: { ...base, interval, interval_count: max + 1 } });
    assert.equal(over.status, 400, interval);
    assert.equal(over.body.code, 'validation_error');
    const message = `interval_count must be at most ${max} when interval is ${interval} (a billing period is at most three years)`;
    assert.equal(over.body.message, message);
    assert.deepEqual(over.body.errors, [{ name: 'interval_count', reason: message }]);
    const atMax = await request('POST', '/api/plans', { body: { ...base, interval, interval_count: max } });
    assert.equal(atMax.status, 201, `${interval} × ${max}`);
  }
  const huge = await request('POST', '/api/plans', { body: { ...base, interval: 'year', interval_count: 365 } });
  assert.equal(huge.status, 400);
  assert.equal((await request('GET', '/api/plans')).body.meta.total, 4, 'only the plans at the bound were stored');
});

test('list sorts by amount, name and created_at with totals; other sort fields are 400', async (t) => {
  const testApp = await buildTestApp(t);
  const { request, clock } = testApp;
  for (const [name, amount] of [
    ['beta', 300],
    ['alpha', 100],
    ['gamma', 200],
  ] as const) {
    await createPlan(testApp, { name, amount });
    clock.advance(1000);
  }
  const names = async (query: string) => {
    const res = await request('GET', `/api/plans?${query}`);
    assert.equal(res.status, 200, query);
    return res.body.data.map((p: { name: string }) => p.name);
  };
  assert.deepEqual(await names(''), ['gamma', 'alpha', 'beta']);
  assert.deepEqual(await names('sort_by=created_at&sort_order=asc'), ['beta', 'alpha', 'gamma']);
  assert.deepEqual(await names('sort_by=amount&sort_order=asc'), ['alpha', 'gamma', 'beta']);
  assert.deepEqual(await names('sort_by=amount'), ['beta', 'gamma', 'alpha']);
  assert.deepEqual(await names('sort_by=name&sort_order=asc'), ['alpha', 'beta', 'gamma']);
  const page = await request('GET', '/api/plans?sort_by=name&sort_order=asc&limit=1&page=1');
  assert.deepEqual(page.body.meta, { total: 3, page: 1, limit: 1 });
  assert.equal(page.body.data[0].name, 'beta');
  const bad = await request('GET', '/api/plans?sort_by=currency');
  assert.equal(bad.status, 400);
  assert.equal(bad.body.message, 'sort_by must be one of: created_at, amount, name');
});

test('patch changes name, active and metadata; active false archives but the plan stays listed', async (t) => {
  const testApp = await buildTestApp(t);
  const { request, clock } = testApp;
  const plan = await createPlan(testApp, { metadata: { a: '1', b: '2' } });
  clock.advance(60_000);
  const res = await request('PATCH', `/api/plans/${plan.id}`, {
    body: { name: 'Renamed', active: false, metadata: { a: '', c: '3' } },
  });
  assert.equal(res.status, 200);
  assert.deepEqual(res.body, {
    ...plan,
    name: 'Renamed',
    active: false,
    metadata: { b: '2', c: '3' },
    updated_at: '2026-01-15T10:01:00.000Z',
  });
  assert.deepEqual((await request('GET', `/api/plans/${plan.id}`)).body, res.body);
  const list = await request('GET', '/api/plans');
  assert.equal(list.body.meta.total, 1);
  assert.equal(list.body.data[0].active, false);
  const reactivated = await request('PATCH', `/api/plans/${plan.id}`, { body: { active: true } });
  assert.equal(reactivated.body.active, true);
});

test('patch with nothing new keeps updated_at', async (t) => {
  const testApp = await buildTestApp(t);
  const plan = await createPlan(testApp, { name: 'Same' });
  testApp.clock.advance(1000);
  const res = await testApp.request('PATCH', `/api/plans/${plan.id}`, { body: { name: 'Same' } });
  assert.equal(res.status, 200);
  assert.deepEqual(res.body, plan);
});

test('prices are immutable: patching amount, currency, interval, interval_count or trial is 400 and changes nothing', async (t) => {
  const testApp = await buildTestApp(t);
  const { request, clock } = testApp;
  const plan = await createPlan(testApp, { trial_period_days: 7 });
  clock.advance(1000);
  const cases: [string, unknown][] = [
    ['amount', 9999],
    ['currency', 'USD'],
    ['interval', 'year'],
    ['interval_count', 2],
    ['trial_period_days', 0],
  ];
  for (const [field, value] of cases) {
    const res = await request('PATCH', `/api/plans/${plan.id}`, {
      body: { name: 'Changed', [field]: value },
    });
    assert.equal(res.status, 400, field);
    assert.equal(res.body.code, 'validation_error');
    const message = `${field} cannot be changed after a plan is created; create a new plan instead`;
    assert.equal(res.body.message, message);
    assert.deepEqual(res.body.errors, [{ name: field, reason: message }]);
  }
  assert.deepEqual((await request('GET', `/api/plans/${plan.id}`)).body, plan);
});

test('patch rejects unknown fields and bad values with 400', async (t) => {
  const testApp = await buildTestApp(t);
  const plan = await createPlan(testApp);
  const cases: [unknown, string][] = [
    [{ active: 'no' }, 'active must be a boolean (true or false)'],
    [{ name: '' }, 'name must not be empty'],
    [{ price: 1 }, 'price is not a known field'],
  ];
  for (const [body, message] of cases) {
    const res = await testApp.request('PATCH', `/api/plans/${plan.id}`, { body });
    assert.equal(res.status, 400, JSON.stringify(body));
    assert.equal(res.body.message, message);
  }
  assert.deepEqual((await testApp.request('GET', `/api/plans/${plan.id}`)).body, plan);
});

test('unknown and malformed plan ids are 404 not_found on get and patch', async (t) => {
  const { request } = await buildTestApp(t);
  for (const id of [UNKNOWN_PLAN, 'nope', 'cus_01JD3Q7Z8X9Y0A1B2C3D4E5F6G']) {
    const got = await request('GET', `/api/plans/${id}`);
    assert.equal(got.status, 404, id);
    assert.equal(got.body.code, 'not_found');
    const patched = await request('PATCH', `/api/plans/${id}`, { body: { name: 'x' } });
    assert.equal(patched.status, 404, id);
    assert.equal(patched.body.code, 'not_found');
  }
});
