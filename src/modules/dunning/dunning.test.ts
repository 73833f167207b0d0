import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, type TestApp, connectSecondInstance } from '../../../test/helpers/app.ts';
import { ON_POSTGRES } from '../../../test/helpers/database.ts';
import { createSubscription } from '../../../test/helpers/factories.ts';
import type { Deps } from '../../deps.ts';
import { JOBS } from '../../worker/jobs.ts';
import { Worker } from '../../worker/runner.ts';
import { applyFailedPayment, applySuccessfulPayment } from '../../billing/subscription-payments.ts';
import { ROW_RETRY_BASE_MS } from '../../db/row-failures.ts';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** The default DUNNING_SCHEDULE `1d,3d,7d,14d`; the final action follows 7 days after the last. */
const STEP_DAYS = [1, 3, 7, 14];
const FINAL_DAY = 21;

/** One worker tick; a failing job fails the test instead of being logged and skipped. */
function runWorker(deps: Deps) {
  const log = {
    error: (object: object) => assert.fail(`worker job failed: ${String(Object.values(object)[0])}`),
  };
  return new Worker(deps, JOBS, log).runOnce();
}

function pay(app: TestApp, id: string) {
  return app.deps.db.transaction().execute((trx) => applySuccessfulPayment(trx, app.deps, id));
}

function fail(app: TestApp, id: string, amount = 5000) {
  return app.deps.db
    .transaction()
    .execute((trx) => applyFailedPayment(trx, app.deps, id, { paymentId: null, amount, currency: 'NGN' }));
}

/** An active subscription (created, then paid). */
async function activeSubscription(app: TestApp) {
  const sub = await createSubscription(app);
  await pay(app, sub.id);
  return sub;
}

/** Every case of the subscription, via the API. */
async function casesOf(app: TestApp, subscriptionId: string) {
  const res = await app.request('GET', '/api/dunning/cases?status=all&limit=100');
  assert.equal(res.status, 200);
  return res.body.data.filter((c: { subscription_id: string }) => c.subscription_id === subscriptionId);
}

async function onlyCase(app: TestApp, subscriptionId: string) {
  const cases = await casesOf(app, subscriptionId);
  assert.equal(cases.length, 1, 'exactly one case');
  return cases[0];
}

/** Events of `topics` since `since`, oldest first. */
async function eventsSince(app: TestApp, since: string, prefix = 'dunning.') {
  const rows = await app.deps.db
    .selectFrom('events')
    .select(['topic', 'data', 'created_at'])
    .where('created_at', '>=', since)
    .orderBy('id')
    .execute();
  return rows.filter((r) => r.topic.startsWith(prefix)).map((r) => ({ topic: r.topic, data: JSON.parse(r.data) }));
}

async function subscription(app: TestApp, id: string) {
  return (await app.request('GET', `/api/subscriptions/${id}`)).body;
}

/** Moves the clock to `days` after `start` (ms since epoch). */
function moveTo(app: TestApp, start: number, days: number, offsetMs = 0) {
  app.clock.set(new Date(start + days * DAY + offsetMs));
}

async function walkToFinalAction(app: TestApp) {
  const sub = await activeSubscription(app);
  const openedAt = app.clock.now().getTime();
  const since = app.clock.now().toISOString();
  const after = await fail(app, sub.id, 5000);
  assert.equal(after.status, 'past_due');

  const opened = await onlyCase(app, sub.id);
  assert.equal(opened.status, 'open');
  assert.equal(opened.reason, 'payment_failed');
  assert.equal(opened.attempts, 1);
  assert.equal(opened.step, 0);
  assert.equal(opened.amount_due, 5000);
  assert.equal(opened.currency, 'NGN');
  assert.equal(opened.opened_at, new Date(openedAt).toISOString());
  assert.equal(opened.next_action_at, new Date(openedAt + DAY).toISOString());
  assert.deepEqual(
    (await eventsSince(app, since)).map((e) => e.topic),
    ['dunning.started'],
  );

  for (const [index, days] of STEP_DAYS.entries()) {
    const step = index + 1;
    moveTo(app, openedAt, days, -1);
    assert.equal((await runWorker(app.deps)).run_dunning_schedule, 0, `step ${step} not due a ms early`);
    moveTo(app, openedAt, days);
    assert.equal((await runWorker(app.deps)).run_dunning_schedule, 1, `step ${step} due`);
    assert.equal((await runWorker(app.deps)).run_dunning_schedule, 0, `step ${step} runs once`);
    const current = await onlyCase(app, sub.id);
    assert.equal(current.step, step);
    assert.equal(current.status, 'open');
    const nextDay = STEP_DAYS[index + 1] ?? FINAL_DAY;
    assert.equal(current.next_action_at, new Date(openedAt + nextDay * DAY).toISOString());
  }
  const reminders = (await eventsSince(app, since)).filter((e) => e.topic === 'dunning.reminder');
  assert.deepEqual(
    reminders.map((e) => [e.data.step, e.data.final, e.data.amount_due, e.data.currency, e.data.id]),
    STEP_DAYS.map((_, i) => [i + 1, i === STEP_DAYS.length - 1, 5000, 'NGN', opened.id]),
  );
  assert.equal((await subscription(app, sub.id)).status, 'past_due', 'still past_due before the final action');

  moveTo(app, openedAt, FINAL_DAY, -1);
  assert.equal((await runWorker(app.deps)).run_dunning_schedule, 0);
  moveTo(app, openedAt, FINAL_DAY);
  assert.equal((await runWorker(app.deps)).run_dunning_schedule, 1);
  assert.equal((await runWorker(app.deps)).run_dunning_schedule, 0, 'nothing after the final action');

  const exhausted = await onlyCase(app, sub.id);
  assert.equal(exhausted.status, 'exhausted');
  assert.equal(exhausted.closed_at, app.clock.now().toISOString());
  assert.equal(exhausted.next_action_at, null);
  const detail = await app.request('GET', `/api/dunning/cases/${opened.id}`);
  assert.equal(detail.status, 200);
  assert.deepEqual(
    detail.body.steps.map((s: { step: number; final: boolean; taken_at: string }) => [s.step, s.final, s.taken_at]),
    STEP_DAYS.map((days, i) => [i + 1, i === STEP_DAYS.length - 1, new Date(openedAt + days * DAY).toISOString()]),
  );
  return { sub, since, openedCase: opened };
}

test('failure → started → each reminder → exhausted → cancelled (DUNNING_FINAL_ACTION=cancel)', async (t) => {
  const app = await buildTestApp(t);
  const { sub, since } = await walkToFinalAction(app);
  const after = await subscription(app, sub.id);
  assert.equal(after.status, 'cancelled');
  assert.equal(after.cancellation_reason, 'dunning_exhausted');
  assert.equal(after.cancelled_at, app.clock.now().toISOString());
  assert.equal(after.ended_at, app.clock.now().toISOString());
  assert.equal(after.entitled, false);
  const topics = (await eventsSince(app, since, '')).map((e) => e.topic);
  assert.deepEqual(topics.slice(-2), ['dunning.exhausted', 'subscription.cancelled']);
  assert.deepEqual(
    topics.filter((topic) => topic.startsWith('dunning.')),
    [
      'dunning.started',
      'dunning.reminder',
      'dunning.reminder',
      'dunning.reminder',
      'dunning.reminder',
      'dunning.exhausted',
    ],
  );
});

test('failure → … → exhausted → unpaid (DUNNING_FINAL_ACTION=unpaid); past-due lists it without an open case', async (t) => {
  const app = await buildTestApp(t, { env: { DUNNING_FINAL_ACTION: 'unpaid' } });
  const { sub, since, openedCase } = await walkToFinalAction(app);
  const after = await subscription(app, sub.id);
  assert.equal(after.status, 'unpaid');
  assert.equal(after.entitled, false);
  assert.equal(after.cancelled_at, null);
  const topics = (await eventsSince(app, since, '')).map((e) => e.topic);
  assert.deepEqual(topics.slice(-2), ['dunning.exhausted', 'subscription.updated']);

  const pastDue = await app.request('GET', '/api/dunning/past-due');
  assert.equal(pastDue.status, 200);
  const row = pastDue.body.data.find((r: { subscription_id: string }) => r.subscription_id === sub.id);
  assert.deepEqual(row, {
    subscription_id: sub.id,
    customer_id: sub.customer_id,
    customer_email: row.customer_email,
    plan_id: sub.plan_id,
    status: 'unpaid',
    dunning_case_id: null,
    amount_due: 5000,
    currency: 'NGN',
    overdue_since: openedCase.opened_at,
    days_overdue: FINAL_DAY,
  });
  assert.match(row.customer_email, /@example\.com$/);

  // A payment brings an unpaid subscription back; the exhausted case stays exhausted.
  await pay(app, sub.id);
  assert.equal((await subscription(app, sub.id)).status, 'active');
  assert.equal((await onlyCase(app, sub.id)).status, 'exhausted');
});

test('a payment before the first reminder recovers the case; nothing more is sent', async (t) => {
  const app = await buildTestApp(t);
  const sub = await activeSubscription(app);
  const since = app.clock.now().toISOString();
  await fail(app, sub.id);
  app.clock.advance(HOUR);
  const after = await pay(app, sub.id);
  assert.equal(after.status, 'active');
  const recovered = await onlyCase(app, sub.id);
  assert.equal(recovered.status, 'recovered');
  assert.equal(recovered.closed_at, app.clock.now().toISOString());
  assert.equal(recovered.next_action_at, null);
  assert.equal(recovered.step, 0);
  app.clock.advance(30 * DAY);
  await runWorker(app.deps);
  const topics = (await eventsSince(app, since)).map((e) => e.topic);
  assert.deepEqual(topics, ['dunning.started', 'dunning.recovered']);
  const recoveredEvent = (await eventsSince(app, since)).find((e) => e.topic === 'dunning.recovered');
  assert.equal(recoveredEvent?.data.status, 'recovered');
});

test('a payment after the first reminder recovers the case and stops the schedule', async (t) => {
  const app = await buildTestApp(t);
  const sub = await activeSubscription(app);
  const since = app.clock.now().toISOString();
  await fail(app, sub.id);
  app.clock.advance(DAY);
  await runWorker(app.deps);
  assert.equal((await onlyCase(app, sub.id)).step, 1);
  app.clock.advance(HOUR);
  await pay(app, sub.id);
  assert.equal((await subscription(app, sub.id)).status, 'active');
  const recovered = await onlyCase(app, sub.id);
  assert.equal(recovered.status, 'recovered');
  assert.equal(recovered.step, 1);
  app.clock.advance(30 * DAY);
  assert.equal((await runWorker(app.deps)).run_dunning_schedule, 0);
  assert.deepEqual(
    (await eventsSince(app, since)).map((e) => e.topic),
    ['dunning.started', 'dunning.reminder', 'dunning.recovered'],
  );
});

test('a second failure on an open case adds an attempt; no second case, no second start', async (t) => {
  const app = await buildTestApp(t);
  const sub = await activeSubscription(app);
  const since = app.clock.now().toISOString();
  await fail(app, sub.id, 5000);
  const first = await onlyCase(app, sub.id);
  app.clock.advance(2 * DAY);
  await fail(app, sub.id, 5000);
  const counted = await onlyCase(app, sub.id);
  assert.equal(counted.id, first.id);
  assert.equal(counted.attempts, 2);
  assert.equal(counted.opened_at, first.opened_at, 'the schedule still counts from the opening');
  assert.deepEqual(
    (await eventsSince(app, since)).map((e) => e.topic),
    ['dunning.started'],
  );
  // A later failure after recovery opens a new case.
  await pay(app, sub.id);
  await fail(app, sub.id, 5000);
  const cases = await casesOf(app, sub.id);
  assert.deepEqual(cases.map((c: { status: string }) => c.status).sort(), ['open', 'recovered']);
});

test('a renewal left unpaid past RENEWAL_GRACE opens a renewal_unpaid case owing the plan price', async (t) => {
  const app = await buildTestApp(t);
  const sub = await activeSubscription(app);
  const paid = await subscription(app, sub.id);
  app.clock.set(new Date(Date.parse(paid.current_period_end) + HOUR));
  const ran = await runWorker(app.deps);
  assert.equal(ran.mark_unpaid_renewals_past_due, 1);
  assert.equal((await subscription(app, sub.id)).status, 'past_due');
  const opened = await onlyCase(app, sub.id);
  assert.equal(opened.reason, 'renewal_unpaid');
  assert.equal(opened.payment_id, null);
  assert.equal(opened.amount_due, 5000);
  assert.equal(opened.currency, 'NGN');
  assert.equal(opened.next_action_at, new Date(app.clock.now().getTime() + DAY).toISOString());
  // A failed charge for that renewal counts on the same case.
  await fail(app, sub.id);
  assert.equal((await onlyCase(app, sub.id)).attempts, 2);
});

test('cancelling the subscription closes its open case as cancelled', async (t) => {
  const app = await buildTestApp(t);
  const sub = await activeSubscription(app);
  await fail(app, sub.id);
  app.clock.advance(DAY);
  await runWorker(app.deps);
  const res = await app.request('PUT', `/api/subscriptions/${sub.id}/cancel`);
  assert.equal(res.status, 200);
  assert.equal(res.body.status, 'cancelled');
  const closed = await onlyCase(app, sub.id);
  assert.equal(closed.status, 'cancelled');
  assert.equal(closed.closed_at, app.clock.now().toISOString());
  assert.equal(closed.next_action_at, null);
  app.clock.advance(30 * DAY);
  assert.equal((await runWorker(app.deps)).run_dunning_schedule, 0);
});

test('a failed payment opens no case for paused or incomplete subscriptions', async (t) => {
  const app = await buildTestApp(t);
  const incomplete = await createSubscription(app);
  await fail(app, incomplete.id);
  const paused = await activeSubscription(app);
  assert.equal((await app.request('PUT', `/api/subscriptions/${paused.id}/pause`)).status, 200);
  await fail(app, paused.id);
  assert.deepEqual(await casesOf(app, incomplete.id), []);
  assert.deepEqual(await casesOf(app, paused.id), []);
});

test('the cases list: {data,total} only, default status open, filters, sorts and pages', async (t) => {
  const app = await buildTestApp(t);
  const subs = [];
  for (let i = 0; i < 3; i++) {
    const sub = await activeSubscription(app);
    await fail(app, sub.id, 1000 * (i + 1));
    subs.push(sub);
    app.clock.advance(HOUR);
  }
  await pay(app, subs[1].id);

  const open = await app.request('GET', '/api/dunning/cases');
  assert.equal(open.status, 200);
  assert.deepEqual(Object.keys(open.body).sort(), ['data', 'total']);
  assert.equal(open.body.total, 2);
  assert.deepEqual(
    open.body.data.map((c: { subscription_id: string }) => c.subscription_id),
    [subs[2].id, subs[0].id],
    'newest first by default',
  );
  const recovered = await app.request('GET', '/api/dunning/cases?status=recovered');
  assert.deepEqual(
    recovered.body.data.map((c: { subscription_id: string }) => c.subscription_id),
    [subs[1].id],
  );
  assert.equal(recovered.body.total, 1);
  const all = await app.request(
    'GET',
    '/api/dunning/cases?status=all&limit=1&page=1&sort_by=next_action_at&sort_order=asc',
  );
  assert.equal(all.body.total, 3);
  assert.equal(all.body.data.length, 1);
  const byNext = await app.request('GET', '/api/dunning/cases?sort_by=next_action_at&sort_order=asc');
  assert.deepEqual(
    byNext.body.data.map((c: { subscription_id: string }) => c.subscription_id),
    [subs[0].id, subs[2].id],
  );

  for (const query of ['status=closed', 'status=', 'sort_by=amount_due', 'sort_order=up']) {
    const bad = await app.request('GET', `/api/dunning/cases?${query}`);
    assert.equal(bad.status, 400, query);
    assert.equal(bad.body.code, 'validation_error', query);
  }
});

test('a case by id has its steps; unknown and malformed ids are 404', async (t) => {
  const app = await buildTestApp(t);
  const sub = await activeSubscription(app);
  await fail(app, sub.id);
  const opened = await onlyCase(app, sub.id);
  const fresh = await app.request('GET', `/api/dunning/cases/${opened.id}`);
  assert.equal(fresh.status, 200);
  assert.deepEqual(fresh.body, { ...opened, steps: [] });
  app.clock.advance(DAY);
  await runWorker(app.deps);
  const stepped = await app.request('GET', `/api/dunning/cases/${opened.id}`);
  assert.equal(stepped.body.steps.length, 1);
  assert.equal(stepped.body.steps[0].step, 1);
  assert.equal(stepped.body.steps[0].final, false);
  assert.match(stepped.body.steps[0].event_id, /^evt_/);
  const event = await app.request('GET', `/api/events/${stepped.body.steps[0].event_id}`);
  assert.equal(event.body.topic, 'dunning.reminder');

  for (const id of ['dun_01JD0000000000000000000000', 'nope', 'cus_01JD0000000000000000000000']) {
    const res = await app.request('GET', `/api/dunning/cases/${id}`);
    assert.equal(res.status, 404, id);
    assert.equal(res.body.code, 'not_found');
  }
});

test('the past-due list shows past_due subscriptions with email, amount due, open case and days overdue', async (t) => {
  const app = await buildTestApp(t);
  const healthy = await activeSubscription(app);
  const behind = await activeSubscription(app);
  await fail(app, behind.id, 4200);
  const opened = await onlyCase(app, behind.id);
  app.clock.advance(3 * DAY + HOUR);
  const res = await app.request('GET', '/api/dunning/past-due');
  assert.equal(res.status, 200);
  assert.deepEqual(Object.keys(res.body).sort(), ['data', 'total']);
  assert.equal(res.body.total, 1);
  assert.equal(res.body.data[0].subscription_id, behind.id);
  assert.equal(res.body.data[0].status, 'past_due');
  assert.equal(res.body.data[0].dunning_case_id, opened.id);
  assert.equal(res.body.data[0].amount_due, 4200);
  assert.equal(res.body.data[0].days_overdue, 3);
  assert.ok(!res.body.data.some((r: { subscription_id: string }) => r.subscription_id === healthy.id));
  const sorted = await app.request('GET', '/api/dunning/past-due?sort_by=current_period_end&limit=1');
  assert.equal(sorted.status, 200);
  assert.equal(sorted.body.data.length, 1);
  const bad = await app.request('GET', '/api/dunning/past-due?sort_by=email');
  assert.equal(bad.status, 400);
});

test('the upcoming list holds open cases due within `within` (default 7d) and says what comes next', async (t) => {
  const app = await buildTestApp(t, { env: { DUNNING_SCHEDULE: '2d,10d' } });
  const soon = await activeSubscription(app);
  await fail(app, soon.id);
  const soonCase = await onlyCase(app, soon.id);
  app.clock.advance(2 * DAY);
  await runWorker(app.deps); // step 1 taken; step 2 (final warning) due on day 10
  const later = await activeSubscription(app);
  await fail(app, later.id); // step 1 due in 2 days

  const week = await app.request('GET', '/api/dunning/upcoming');
  assert.equal(week.status, 200);
  assert.deepEqual(Object.keys(week.body).sort(), ['data', 'total']);
  assert.deepEqual(
    week.body.data.map((c: { subscription_id: string; next_action: string; next_step: number }) => [
      c.subscription_id,
      c.next_action,
      c.next_step,
    ]),
    [[later.id, 'reminder', 1]],
  );
  const month = await app.request('GET', '/api/dunning/upcoming?within=30d&sort_by=next_action_at&sort_order=asc');
  assert.equal(month.body.total, 2);
  assert.deepEqual(
    month.body.data.map((c: { id: string; next_step: number }) => [c.id, c.next_step]),
    [
      [(await onlyCase(app, later.id)).id, 1],
      [soonCase.id, 2],
    ],
  );
  app.clock.advance(8 * DAY);
  await runWorker(app.deps); // final warning taken on day 10; the final action follows on day 18
  const final = await app.request('GET', '/api/dunning/upcoming?within=8d');
  const entry = final.body.data.find((c: { id: string }) => c.id === soonCase.id);
  assert.equal(entry.next_action, 'final_action');
  assert.equal(entry.next_step, null);

  for (const within of ['7 days', 'abc', '1.5d', '400d', '-1d', '']) {
    const bad = await app.request('GET', `/api/dunning/upcoming?within=${encodeURIComponent(within)}`);
    assert.equal(bad.status, 400, within);
    assert.equal(bad.body.code, 'validation_error');
    assert.match(bad.body.message, /within/);
  }
});

test(
  'each step runs once when two workers share one PostgreSQL database',
  {
    skip: !ON_POSTGRES && 'PostgreSQL only: SQLite in memory cannot be opened by a second handle',
  },
  async (t) => {
    const app = await buildTestApp(t);
    const second = await connectSecondInstance(app);
    t.after(() => second.close());
    const subs = [];
    for (let i = 0; i < 30; i++) {
      const sub = await activeSubscription(app);
      await fail(app, sub.id);
      subs.push(sub);
    }
    const start = app.clock.now().getTime();
    let total = 0;
    for (const days of [...STEP_DAYS, FINAL_DAY]) {
      app.clock.set(new Date(start + days * DAY));
      const [a, b] = await Promise.all([runWorker(app.deps), runWorker(second)]);
      const handled = (a.run_dunning_schedule ?? 0) + (b.run_dunning_schedule ?? 0);
      assert.equal(handled, subs.length, `day ${days}: each case handled once`);
      total += handled;
    }
    assert.equal(total, subs.length * 5);
    const steps = await app.deps.db.selectFrom('dunning_steps').select(['case_id', 'step']).execute();
    assert.equal(steps.length, subs.length * STEP_DAYS.length);
    const reminders = await app.deps.db
      .selectFrom('events')
      .select('id')
      .where('topic', '=', 'dunning.reminder')
      .execute();
    assert.equal(reminders.length, subs.length * STEP_DAYS.length);
    for (const sub of subs) assert.equal((await subscription(app, sub.id)).status, 'cancelled');
  },
);

test('a step that fails mid-way rolls back whole and is taken once at its retry', async (t) => {
  const app = await buildTestApp(t);
  const sub = await activeSubscription(app);
  await fail(app, sub.id);
  const opened = await onlyCase(app, sub.id);
  // A step row already present (as if another worker had written it) makes the insert fail
  // after the case update and the event: the whole step must roll back, not half-apply.
  await app.deps.db
    .insertInto('dunning_steps')
    .values({ case_id: opened.id, step: 1, final: false, event_id: 'evt_x', taken_at: opened.opened_at })
    .execute();
  app.clock.advance(DAY);
  const errors: unknown[] = [];
  await new Worker(app.deps, JOBS, { error: (o: object) => errors.push(o) }).runOnce();
  assert.equal(errors.length, 1);
  const unchanged = await onlyCase(app, sub.id);
  assert.equal(unchanged.step, 0, 'the case did not move');
  const reminders = await app.deps.db
    .selectFrom('events')
    .select('id')
    .where('topic', '=', 'dunning.reminder')
    .execute();
  assert.equal(reminders.length, 0, 'no reminder event without its step');
  await app.deps.db.deleteFrom('dunning_steps').where('case_id', '=', opened.id).execute();
  // The failed case waits for its retry (the worker's row backoff) instead of failing every tick.
  assert.equal((await runWorker(app.deps)).run_dunning_schedule, 0);
  app.clock.advance(ROW_RETRY_BASE_MS);
  assert.equal((await runWorker(app.deps)).run_dunning_schedule, 1);
  assert.equal((await onlyCase(app, sub.id)).step, 1);
});
