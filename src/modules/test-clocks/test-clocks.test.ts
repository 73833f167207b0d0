import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { buildTestApp, connectSecondInstance, type TestApp, type TestResponse } from '../../../test/helpers/app.ts';
import { ON_POSTGRES } from '../../../test/helpers/database.ts';
import { createPlan } from '../../../test/helpers/factories.ts';
import { PROVIDER_ENV, paystackCharge, postPaystack } from '../../../test/helpers/provider-events.ts';
import type { Deps } from '../../deps.ts';
import { CLOCK_AWARE_JOBS, JOBS } from '../../worker/jobs.ts';
import { Worker } from '../../worker/runner.ts';
import { payInvoiceOutOfBand } from '../../billing/pay-out-of-band.ts';
import { type Job } from '../../worker/job.ts';
import { earliest, REAL_TIME, whereInScope } from '../../db/scope.ts';
import { advanceTestClocks } from '../../worker/test-clocks.jobs.ts';

const ENV = { TEST_CLOCKS: 'true' };
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const T0 = '2026-03-01T00:00:00.000Z';

const failLog = { error: (object: object) => assert.fail(`worker job failed: ${String(Object.values(object)[0])}`) };

/**
 * A stand-in for automatic charges, written as any clock-aware job must be: it claims rows
 * through whereInScope, reads "now" from deps.clock, and names its next due instant. It pays
 * every open invoice once due (out of band).
 */
const payDueInvoices: Job = {
  name: 'test_pay_due_invoices',
  batchSize: 10,
  run: async (deps, scope = REAL_TIME) => {
    const rows = await whereInScope(deps.db.selectFrom('invoices').select('id'), 'invoices.test_clock_id', scope)
      .where('status', '=', 'open')
      .where('due_at', '<=', deps.clock.now().toISOString())
      .limit(10)
      .execute();
    for (const row of rows) await payInvoiceOutOfBand(deps.db, deps, row.id, { paid_out_of_band: true });
    return rows.length;
  },
  nextDueAt: async (deps, scope, after) => {
    const row = await whereInScope(
      deps.db.selectFrom('invoices').select((eb) => eb.fn.min('due_at').as('due')),
      'invoices.test_clock_id',
      scope,
    )
      .where('status', '=', 'open')
      .where('due_at', '>', after.toISOString())
      .executeTakeFirst();
    return earliest([row?.due]);
  },
};

/** An app whose database a second instance can open (SQLite: a file; PostgreSQL: its schema). */
function sharedApp(t: TestContext) {
  if (ON_POSTGRES) return buildTestApp(t, { env: ENV });
  const dir = mkdtempSync(join(tmpdir(), 'test-clocks-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return buildTestApp(t, { env: ENV, sqliteFile: join(dir, 'billing.db') });
}

function clockWorker(deps: Deps, extra: Job[] = []): Worker {
  return new Worker(deps, [advanceTestClocks([...CLOCK_AWARE_JOBS, ...extra])], failLog);
}

async function createClock(app: TestApp, frozenTime = T0, name = 'test') {
  const res = await app.request('POST', '/api/test-clocks', { body: { frozen_time: frozenTime, name } });
  assert.equal(res.status, 201, res.text);
  return res.body;
}

/** A clock customer with an `active` monthly subscription whose first invoice is paid at the clock's time. */
async function activeClockSubscription(app: TestApp, clockId: string, plan?: { id: string }) {
  const customer = await app.request('POST', '/api/customers', {
    body: { email: `c${Math.random()}@example.com`, test_clock: clockId },
  });
  assert.equal(customer.status, 201, customer.text);
  const planId = plan?.id ?? (await createPlan(app)).id;
  const sub = await app.request('POST', '/api/subscriptions', {
    body: { customer_id: customer.body.id, plan_id: planId },
  });
  assert.equal(sub.status, 201, sub.text);
  const invoices = await app.request('GET', `/api/invoices?subscription_id=${sub.body.id}`);
  const paid = await app.request('POST', `/api/invoices/${invoices.body.data[0].id}/pay`, {
    body: { paid_out_of_band: true },
  });
  assert.equal(paid.status, 200, paid.text);
  return {
    customer: customer.body,
    subscription: (await app.request('GET', `/api/subscriptions/${sub.body.id}`)).body,
  };
}

async function advance(app: TestApp, clockId: string, frozenTime: string) {
  const res = await app.request('POST', `/api/test-clocks/${clockId}/advance`, { body: { frozen_time: frozenTime } });
  assert.equal(res.status, 202, res.text);
  assert.equal(res.body.status, 'advancing');
  return res.body;
}

async function invoicesOf(app: TestApp, subscriptionId: string) {
  const res = await app.request('GET', `/api/invoices?subscription_id=${subscriptionId}&sort_order=asc&limit=100`);
  return res.body.data as {
    id: string;
    period_start: string;
    period_end: string;
    created_at: string;
    status: string;
  }[];
}

async function allEvents(app: TestApp) {
  const events = [];
  for (let page = 0; ; page++) {
    const res = await app.request('GET', `/api/events?limit=100&page=${page}&sort_order=asc`);
    events.push(...res.body.data);
    if (res.body.data.length < 100) return events;
  }
}

test('TEST_CLOCKS off (the default): every test-clock route is 404, and test_clock on a customer is 400', async (t) => {
  const app = await buildTestApp(t);
  for (const [method, path, body] of [
    ['POST', '/api/test-clocks', { frozen_time: T0 }],
    ['GET', '/api/test-clocks', undefined],
    ['GET', '/api/test-clocks/clock_01JD3Q7Z8X9Y0A1B2C3D4E5F6G', undefined],
    ['DELETE', '/api/test-clocks/clock_01JD3Q7Z8X9Y0A1B2C3D4E5F6G', undefined],
    ['POST', '/api/test-clocks/clock_01JD3Q7Z8X9Y0A1B2C3D4E5F6G/advance', { frozen_time: T0 }],
    ['POST', '/api/test-clocks/clock_01JD3Q7Z8X9Y0A1B2C3D4E5F6G/advance', { nonsense: true }],
  ] as const) {
    const res = await app.request(method, path, body === undefined ? {} : { body });
    assert.equal(res.status, 404, `${method} ${path}`);
    assert.equal(res.body.code, 'not_found');
  }
  const res = await app.request('POST', '/api/customers', {
    body: { email: 'a@example.com', test_clock: 'clock_01JD3Q7Z8X9Y0A1B2C3D4E5F6G' },
  });
  assert.equal(res.status, 400);
  assert.equal(res.body.code, 'validation_error');
  assert.match(res.body.message, /test clocks are disabled/);
});

test('create, get, list; advance refuses an earlier or equal time, more than 2 years, and a second advance (409)', async (t) => {
  const app = await buildTestApp(t, { env: ENV });
  const clock = await createClock(app);
  assert.match(clock.id, /^clock_/);
  assert.deepEqual(clock, {
    id: clock.id,
    name: 'test',
    frozen_time: T0,
    status: 'ready',
    created_at: app.clock.now().toISOString(),
  });
  assert.deepEqual((await app.request('GET', `/api/test-clocks/${clock.id}`)).body, clock);
  const list = await app.request('GET', '/api/test-clocks');
  assert.deepEqual(list.body, { data: [clock], meta: { total: 1, page: 0, limit: 10 } });
  assert.equal((await app.request('GET', '/api/test-clocks/clock_01JD3Q7Z8X9Y0A1B2C3D4E5F6G')).status, 404);
  assert.equal((await app.request('GET', '/api/test-clocks/nope')).status, 404);

  for (const time of ['2026-02-28T23:59:59.999Z', T0, '2028-03-01T00:00:00.001Z']) {
    const res: TestResponse = await app.request('POST', `/api/test-clocks/${clock.id}/advance`, {
      body: { frozen_time: time },
    });
    assert.equal(res.status, 400, time);
    assert.equal(res.body.code, 'validation_error');
  }
  await advance(app, clock.id, '2028-03-01T00:00:00.000Z');
  const again = await app.request('POST', `/api/test-clocks/${clock.id}/advance`, {
    body: { frozen_time: '2028-03-01T00:00:00.000Z' },
  });
  assert.equal(again.status, 409);
  assert.equal(again.body.code, 'conflict');
  assert.equal(
    (
      await app.request('POST', '/api/test-clocks/clock_01JD3Q7Z8X9Y0A1B2C3D4E5F6G/advance', {
        body: { frozen_time: '2028-03-01T00:00:00.000Z' },
      })
    ).status,
    404,
  );
  assert.equal((await clockWorker(app.deps).runOnce()).advance_test_clocks, 1);
  const ready = (await app.request('GET', `/api/test-clocks/${clock.id}`)).body;
  assert.equal(ready.status, 'ready');
  assert.equal(ready.frozen_time, '2028-03-01T00:00:00.000Z');
  const topics = (await allEvents(app)).map((e) => e.topic);
  assert.deepEqual(topics, ['test_clock.advancing', 'test_clock.ready']);

  const unknown = await app.request('POST', '/api/customers', {
    body: { email: 'b@example.com', test_clock: 'clock_01JD3Q7Z8X9Y0A1B2C3D4E5F6G' },
  });
  assert.equal(unknown.status, 400);
  assert.equal(unknown.body.code, 'validation_error');
  assert.match(unknown.body.message, /test_clock clock_01JD3Q7Z8X9Y0A1B2C3D4E5F6G does not exist/);
});

test("a monthly subscription on a clock advanced 3 months (charged when due) gets 3 renewal invoices in order, at the clock's times", async (t) => {
  const app = await buildTestApp(t, { env: ENV });
  const clock = await createClock(app);
  const { customer, subscription } = await activeClockSubscription(app, clock.id);
  assert.equal(customer.test_clock, clock.id);
  assert.equal(customer.created_at, T0);
  assert.equal(subscription.status, 'active');
  assert.equal(subscription.created_at, T0);
  assert.equal(subscription.current_period_end, '2026-04-01T00:00:00.000Z');

  await advance(app, clock.id, '2026-06-01T00:00:00.000Z');
  assert.equal((await clockWorker(app.deps, [payDueInvoices]).runOnce()).advance_test_clocks, 1);
  assert.equal((await app.request('GET', `/api/test-clocks/${clock.id}`)).body.status, 'ready');

  const invoices = await invoicesOf(app, subscription.id);
  assert.deepEqual(
    invoices.map((i) => [i.period_start, i.period_end, i.created_at, i.status]),
    [
      [T0, '2026-04-01T00:00:00.000Z', T0, 'paid'],
      ['2026-04-01T00:00:00.000Z', '2026-05-01T00:00:00.000Z', '2026-04-01T00:00:00.000Z', 'paid'],
      ['2026-05-01T00:00:00.000Z', '2026-06-01T00:00:00.000Z', '2026-05-01T00:00:00.000Z', 'paid'],
      ['2026-06-01T00:00:00.000Z', '2026-07-01T00:00:00.000Z', '2026-06-01T00:00:00.000Z', 'paid'],
    ],
  );
  const after = (await app.request('GET', `/api/subscriptions/${subscription.id}`)).body;
  assert.equal(after.status, 'active');
  assert.equal(after.current_period_end, '2026-07-01T00:00:00.000Z');
  const created = (await allEvents(app)).filter((e) => e.topic === 'invoice.created');
  assert.deepEqual(
    created.map((e) => [e.created_at, e.data.test_clock]),
    [T0, '2026-04-01T00:00:00.000Z', '2026-05-01T00:00:00.000Z', '2026-06-01T00:00:00.000Z'].map((time) => [
      time,
      clock.id,
    ]),
  );
});

test('an unpaid renewal on a clock goes past_due, through every dunning step at its clock time, to the final action, in one advance', async (t) => {
  const app = await buildTestApp(t, { env: ENV });
  const clock = await createClock(app);
  const { subscription } = await activeClockSubscription(app, clock.id);
  await advance(app, clock.id, '2026-06-01T00:00:00.000Z');
  await clockWorker(app.deps).runOnce();
  assert.equal((await app.request('GET', `/api/test-clocks/${clock.id}`)).body.status, 'ready');

  const renewal = '2026-04-01T00:00:00.000Z';
  const opened = Date.parse(renewal) + HOUR; // RENEWAL_GRACE
  const events = (await allEvents(app)).filter((e) => e.data.test_clock === clock.id);
  const at = (topic: string) => events.filter((e) => e.topic === topic).map((e) => e.created_at);
  assert.deepEqual(at('invoice.created'), [T0, renewal]);
  assert.deepEqual(at('subscription.past_due'), [new Date(opened).toISOString()]);
  assert.deepEqual(at('dunning.started'), [new Date(opened).toISOString()]);
  assert.deepEqual(
    at('dunning.reminder'),
    [1, 3, 7, 14].map((days) => new Date(opened + days * DAY).toISOString()),
  );
  assert.deepEqual(
    events.filter((e) => e.topic === 'dunning.reminder').map((e) => [e.data.step, e.data.final]),
    [
      [1, false],
      [2, false],
      [3, false],
      [4, true],
    ],
  );
  const final = new Date(opened + 21 * DAY).toISOString();
  assert.deepEqual(at('dunning.exhausted'), [final]);
  assert.deepEqual(at('subscription.cancelled'), [final]);
  assert.deepEqual(at('invoice.marked_uncollectible'), [final]);
  const after = (await app.request('GET', `/api/subscriptions/${subscription.id}`)).body;
  assert.equal(after.status, 'cancelled');
  assert.equal(after.cancellation_reason, 'dunning_exhausted');
  assert.equal(after.ended_at, final);
  // The whole story is in due-time order.
  const times = events.map((e) => e.created_at);
  assert.deepEqual(times, [...times].sort());
});

test('two clocks advanced together do not touch each other or a real customer, and the real-time worker leaves clock rows alone', async (t) => {
  const app = await sharedApp(t);
  const plan = await createPlan(app);
  const a = await createClock(app, T0, 'a');
  const b = await createClock(app, T0, 'b');
  const subA = (await activeClockSubscription(app, a.id, plan)).subscription;
  const subB = (await activeClockSubscription(app, b.id, plan)).subscription;
  // A real customer, paid up to a month from the real time (2026-01-15).
  const real = await app.request('POST', '/api/customers', { body: { email: 'real@example.com' } });
  const realSub = (
    await app.request('POST', '/api/subscriptions', { body: { customer_id: real.body.id, plan_id: plan.id } })
  ).body;
  const realInvoice = (await invoicesOf(app, realSub.id))[0]!;
  await app.request('POST', `/api/invoices/${realInvoice.id}/pay`, { body: { paid_out_of_band: true } });
  const realBefore = (await app.request('GET', `/api/subscriptions/${realSub.id}`)).body;

  await advance(app, a.id, '2026-04-01T00:30:00.000Z'); // renewal issued, inside the grace
  await advance(app, b.id, '2026-06-01T00:00:00.000Z'); // renewal, past_due, dunning to the end
  // Both clocks advancing at once; on PostgreSQL two workers share them (an in-process SQLite
  // file cannot serve two writers that wait on each other: one worker takes both there).
  const workers = [clockWorker(app.deps)];
  if (ON_POSTGRES) workers.push(clockWorker(await connectSecondInstance(app)));
  await Promise.all(workers.map((worker) => worker.runOnce()));

  assert.equal((await app.request('GET', `/api/subscriptions/${subA.id}`)).body.status, 'active');
  assert.equal((await invoicesOf(app, subA.id)).length, 2);
  assert.equal((await app.request('GET', `/api/subscriptions/${subB.id}`)).body.status, 'cancelled');
  assert.deepEqual((await app.request('GET', `/api/subscriptions/${realSub.id}`)).body, realBefore);
  assert.equal((await invoicesOf(app, realSub.id)).length, 1);
  const events = await allEvents(app);
  assert.equal(events.filter((e) => e.topic === 'test_clock.ready').length, 2);
  assert.equal(events.filter((e) => e.topic === 'dunning.started' && e.data.test_clock === a.id).length, 0);

  // Real time passes the real subscription's period end and far beyond the clocks' own dues:
  // the real-time jobs renew the real one only.
  app.clock.set(new Date('2027-01-01T00:00:00.000Z'));
  const beforeA = await invoicesOf(app, subA.id);
  await new Worker(app.deps, JOBS, failLog).runOnce();
  assert.equal((await invoicesOf(app, realSub.id)).length, 2);
  assert.equal((await app.request('GET', `/api/subscriptions/${realSub.id}`)).body.status, 'past_due');
  assert.deepEqual(await invoicesOf(app, subA.id), beforeA);
  assert.equal((await app.request('GET', `/api/subscriptions/${subA.id}`)).body.status, 'active');
});

test(
  'two workers on one database run one advance once',
  {
    skip: !ON_POSTGRES && 'PostgreSQL only: two in-process SQLite writers block each other',
  },
  async (t) => {
    const app = await sharedApp(t);
    const clock = await createClock(app);
    const { subscription } = await activeClockSubscription(app, clock.id);
    await advance(app, clock.id, '2026-06-01T00:00:00.000Z');
    const second = await connectSecondInstance(app);
    const runs = await Promise.all([
      clockWorker(app.deps, [payDueInvoices]).runOnce(),
      clockWorker(second, [payDueInvoices]).runOnce(),
    ]);
    assert.equal(
      runs.reduce((sum, handled) => sum + (handled.advance_test_clocks ?? 0), 0),
      1,
    );
    assert.equal((await invoicesOf(app, subscription.id)).length, 4);
    const events = await allEvents(app);
    assert.equal(events.filter((e) => e.topic === 'test_clock.ready').length, 1);
    assert.equal(events.filter((e) => e.topic === 'invoice.created').length, 4);
  },
);

test('DELETE removes the clock and its customers with their subscriptions, invoices and dunning cases; events stay', async (t) => {
  const app = await buildTestApp(t, { env: ENV });
  const clock = await createClock(app);
  const { customer, subscription } = await activeClockSubscription(app, clock.id);
  await advance(app, clock.id, '2026-04-10T00:00:00.000Z');
  await clockWorker(app.deps).runOnce();
  const invoices = await invoicesOf(app, subscription.id);
  const cases = (await app.request('GET', `/api/dunning/cases?subscription_id=${subscription.id}`)).body.data;
  assert.equal(cases.length, 1);
  const eventCount = (await app.request('GET', '/api/events')).body.meta.total;
  const kept = await app.request('POST', '/api/customers', { body: { email: 'kept@example.com' } });
  const method = {
    provider: 'paystack' as const,
    status: 'active' as const,
    fingerprint: 'SIG_1',
    credential: 'v1.not-a-real-ciphertext',
    provider_customer_id: null,
    email: null,
    type: 'card',
    brand: 'visa',
    last4: '4081',
    exp_month: 12,
    exp_year: 2030,
    default_at: T0,
    created_at: T0,
    updated_at: T0,
    detached_at: null,
  };
  await app.deps.db
    .insertInto('payment_methods')
    .values([
      { ...method, id: 'pm_01JD3Q7Z8X9Y0A1B2C3D4E5F6G', customer_id: customer.id },
      { ...method, id: 'pm_01JD3Q7Z8X9Y0A1B2C3D4E5F6H', customer_id: kept.body.id },
    ])
    .execute();

  const res = await app.request('DELETE', `/api/test-clocks/${clock.id}`);
  assert.equal(res.status, 204);
  assert.equal((await app.request('GET', `/api/test-clocks/${clock.id}`)).status, 404);
  assert.equal((await app.request('GET', `/api/customers/${customer.id}`)).status, 404);
  assert.equal((await app.request('GET', `/api/subscriptions/${subscription.id}`)).status, 404);
  for (const invoice of invoices) assert.equal((await app.request('GET', `/api/invoices/${invoice.id}`)).status, 404);
  assert.equal((await app.request('GET', `/api/dunning/cases/${cases[0].id}`)).status, 404);
  assert.deepEqual((await app.request('GET', '/api/customers')).body.data, [kept.body]);
  assert.equal((await app.request('GET', '/api/customers')).body.meta.total, 1);
  assert.equal((await app.request('GET', '/api/subscriptions')).body.meta.total, 0);
  assert.equal((await app.request('GET', '/api/invoices')).body.meta.total, 0);
  assert.equal((await app.request('GET', '/api/events')).body.meta.total, eventCount + 1);
  assert.deepEqual(
    (await app.deps.db.selectFrom('payment_methods').select('customer_id').execute()).map((row) => row.customer_id),
    [kept.body.id],
  );
  assert.equal((await app.request('DELETE', `/api/test-clocks/${clock.id}`)).status, 404);
});

test('a provider event for a clock customer is processed at the clock time and its events name the clock', async (t) => {
  const app = await buildTestApp(t, { env: { ...ENV, ...PROVIDER_ENV } });
  const clock = await createClock(app);
  const customer = (
    await app.request('POST', '/api/customers', { body: { email: 'clocked@example.com', test_clock: clock.id } })
  ).body;
  const plan = await createPlan(app);
  const sub = (
    await app.request('POST', '/api/subscriptions', { body: { customer_id: customer.id, plan_id: plan.id } })
  ).body;
  const res = await postPaystack(
    app,
    paystackCharge({ amount: 5000, email: 'clocked@example.com', metadata: { subscription_id: sub.id } }),
  );
  assert.equal(res.status, 200, res.text);
  const after = (await app.request('GET', `/api/subscriptions/${sub.id}`)).body;
  assert.equal(after.status, 'active');
  assert.equal(after.current_period_start, T0);
  assert.equal(after.updated_at, T0);
  const payment = (await app.request('GET', `/api/payments?customer_id=${customer.id}`)).body.data[0];
  assert.equal(payment.created_at, T0);
  const events = (await allEvents(app)).filter((e) => ['payment.succeeded', 'invoice.paid'].includes(e.topic));
  assert.deepEqual(
    events.map((e) => [e.topic, e.created_at, e.data.test_clock]),
    [
      ['payment.succeeded', T0, clock.id],
      ['invoice.paid', T0, clock.id],
    ],
  );
});

test('an advance that dies midway resumes from the time it reached once its lease lapses, and nothing runs twice', async (t) => {
  const app = await buildTestApp(t, { env: ENV });
  const clock = await createClock(app);
  const { subscription } = await activeClockSubscription(app, clock.id);
  await advance(app, clock.id, '2026-06-01T00:00:00.000Z');
  // A worker that crashes when the clock reaches the third dunning reminder's instant.
  const opened = Date.parse('2026-04-01T01:00:00.000Z');
  const crashAt = new Date(opened + 7 * DAY).toISOString();
  const crashing: Job = {
    name: 'crash',
    batchSize: 1,
    run: async (deps) => {
      if (deps.clock.now().toISOString() === crashAt) throw new Error('worker died');
      return 0;
    },
    nextDueAt: async () => null,
  };
  const errors: unknown[] = [];
  const dying = new Worker(app.deps, [advanceTestClocks([crashing, ...CLOCK_AWARE_JOBS])], {
    error: (object) => errors.push(object),
  });
  assert.equal((await dying.runOnce()).advance_test_clocks, 0);
  assert.equal(errors.length, 1);
  const row = await app.deps.db
    .selectFrom('test_clocks')
    .selectAll()
    .where('id', '=', clock.id)
    .executeTakeFirstOrThrow();
  assert.equal(row.status, 'advancing');
  assert.equal(row.reached_time, crashAt);
  // Its lease holds for ADVANCE_LEASE_MS of real time: nobody takes the advance over before.
  assert.equal((await clockWorker(app.deps).runOnce()).advance_test_clocks, 0);
  app.clock.advance(60_000);
  assert.equal((await clockWorker(app.deps).runOnce()).advance_test_clocks, 1);
  assert.equal((await app.request('GET', `/api/test-clocks/${clock.id}`)).body.status, 'ready');
  const reminders = (await allEvents(app)).filter((e) => e.topic === 'dunning.reminder');
  assert.deepEqual(
    reminders.map((e) => e.created_at),
    [1, 3, 7, 14].map((days) => new Date(opened + days * DAY).toISOString()),
  );
  assert.equal((await app.request('GET', `/api/subscriptions/${subscription.id}`)).body.status, 'cancelled');
});

test('a step that outlasts the lease renews it as it runs: a second instance never takes the advance over', async (t) => {
  const app = await sharedApp(t);
  const second = await connectSecondInstance(app);
  t.after(() => second.close());
  const clock = await createClock(app);
  await advance(app, clock.id, '2026-03-02T00:00:00.000Z');
  // A step whose batches take 45 s of real time each, three of them: 135 s, over twice the
  // lease. After each batch the second instance tries to take the advance.
  let batches = 0;
  const takeovers: number[] = [];
  const slow: Job = {
    name: 'slow',
    batchSize: 1,
    run: async () => {
      if (batches >= 3) return 0;
      batches += 1;
      app.clock.advance(45_000);
      takeovers.push((await clockWorker(second).runOnce()).advance_test_clocks ?? -1);
      return 1;
    },
    nextDueAt: async () => null,
  };
  assert.equal((await clockWorker(app.deps, [slow]).runOnce()).advance_test_clocks, 1);
  assert.equal(batches, 3);
  assert.deepEqual(takeovers, [0, 0, 0]);
  assert.equal((await app.request('GET', `/api/test-clocks/${clock.id}`)).body.status, 'ready');
});

test('a worker whose lease was taken over mid-step stops: it never finishes the advance itself', async (t) => {
  const app = await sharedApp(t);
  const clock = await createClock(app);
  await advance(app, clock.id, '2026-03-02T00:00:00.000Z');
  let batches = 0;
  const stolen: Job = {
    name: 'stolen',
    batchSize: 1,
    run: async (deps) => {
      batches += 1;
      // Another worker took the lease (as after a pause longer than the lease).
      await deps.db
        .updateTable('test_clocks')
        .set({ lease_token: 'someone-else' })
        .where('id', '=', clock.id)
        .execute();
      app.clock.advance(45_000);
      return 1;
    },
    nextDueAt: async () => null,
  };
  await clockWorker(app.deps, [stolen]).runOnce();
  assert.equal(batches, 1, 'the next batch found the lease lost and stopped');
  const row = await app.deps.db
    .selectFrom('test_clocks')
    .selectAll()
    .where('id', '=', clock.id)
    .executeTakeFirstOrThrow();
  assert.equal(row.status, 'advancing');
  assert.equal(row.lease_token, 'someone-else');
});
