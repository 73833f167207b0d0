import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import { createCustomer, createPlan, createSubscription } from '../../test/helpers/factories.ts';
import { JOBS } from '../worker/jobs.ts';
import { Worker } from '../worker/runner.ts';
import { lockSubscription, transitionSubscription } from '../modules/subscriptions/subscriptions.lifecycle.ts';
import { applyFailedPayment, applySuccessfulPayment } from '../billing/subscription-payments.ts';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const NOW = '2026-01-15T10:00:00.000Z';
const UNKNOWN_SUB = 'sub_01JD3Q7Z8X9Y0A1B2C3D4E5F6G';
const CANNOT_CANCEL_BODY = {
  code: 'validation_error',
  message: 'subscription cannot be cancelled in its current state',
  details: null,
};

/** Topics of every subscription event so far, oldest first. */
async function topics(app: TestApp): Promise<string[]> {
  const res = await app.request('GET', '/api/events?limit=100&sort_order=asc');
  assert.ok(res.body.meta.total <= 100, 'too many events for one page');
  return res.body.data
    .map((e: { topic: string }) => e.topic)
    .filter((topic: string) => topic.startsWith('subscription.'));
}

/** A payment succeeding for the subscription, as provider processing applies it. */
function pay(app: TestApp, id: string) {
  return app.deps.db.transaction().execute((trx) => applySuccessfulPayment(trx, app.deps, id));
}

function failPayment(app: TestApp, id: string) {
  return app.deps.db.transaction().execute((trx) => applyFailedPayment(trx, app.deps, id));
}

/** past_due → unpaid, as dunning's final action does with DUNNING_FINAL_ACTION=unpaid. */
async function unpaidSubscription(app: TestApp) {
  const pastDue = await failPayment(app, (await activeSubscription(app)).id);
  return app.deps.db.transaction().execute(async (trx) => {
    const row = await lockSubscription(trx, pastDue.id);
    return transitionSubscription(trx, app.deps.clock, row, 'dunning_exhausted_unpaid');
  });
}

async function activeSubscription(app: TestApp) {
  const sub = await createSubscription(app);
  return pay(app, sub.id);
}

function runWorker(app: TestApp) {
  const log = { error: (object: object) => assert.fail(`worker job failed: ${JSON.stringify(object)}`) };
  return new Worker(app.deps, JOBS, log).runOnce();
}

test('create without a trial is incomplete, not entitled, in its first period on the anchor, and emits subscription.created', async (t) => {
  const app = await buildTestApp(t);
  const customer = await createCustomer(app);
  const plan = await createPlan(app);
  const res = await app.request('POST', '/api/subscriptions', {
    body: { customer_id: customer.id, plan_id: plan.id, metadata: { seat: '3' } },
  });
  assert.equal(res.status, 201);
  assert.match(res.body.id, /^sub_[0-9A-Z]{26}$/);
  assert.deepEqual(res.body, {
    id: res.body.id,
    customer_id: customer.id,
    plan_id: plan.id,
    status: 'incomplete',
    entitled: false,
    // The first period runs from creation (SPEC §4): paying late does not move it.
    current_period_start: NOW,
    current_period_end: '2026-02-15T10:00:00.000Z',
    trial_end: null,
    billing_cycle_anchor: NOW,
    quantity: 1,
    pending_update: null,
    cancel_at_period_end: false,
    cancelled_at: null,
    ended_at: null,
    cancellation_reason: null,
    cancellation_comment: null,
    tax_rate_ids: [],
    metadata: { seat: '3' },
    created_at: NOW,
    updated_at: NOW,
  });
  assert.deepEqual((await app.request('GET', `/api/subscriptions/${res.body.id}`)).body, res.body);
  const events = await app.request('GET', '/api/events?topic=subscription.created');
  assert.equal(events.body.meta.total, 1);
  assert.deepEqual(events.body.data[0].data, res.body);
});

test('create with trial_period_days in the request is trialing until trial_end, and entitled', async (t) => {
  const app = await buildTestApp(t);
  const sub = await createSubscription(app, { trialPeriodDays: 14 });
  assert.equal(sub.status, 'trialing');
  assert.equal(sub.entitled, true);
  assert.equal(sub.trial_end, '2026-01-29T10:00:00.000Z');
  assert.equal(sub.current_period_start, NOW);
  assert.equal(sub.current_period_end, '2026-01-29T10:00:00.000Z');
});

test("create takes the plan's trial_period_days unless the request gives its own (0 = no trial)", async (t) => {
  const app = await buildTestApp(t);
  const plan = await createPlan(app, { trial_period_days: 7 });
  const fromPlan = await createSubscription(app, { planId: plan.id });
  assert.equal(fromPlan.status, 'trialing');
  assert.equal(fromPlan.trial_end, '2026-01-22T10:00:00.000Z');
  assert.equal(fromPlan.current_period_end, '2026-01-22T10:00:00.000Z');
  const overridden = await createSubscription(app, { planId: plan.id, trialPeriodDays: 3 });
  assert.equal(overridden.trial_end, '2026-01-18T10:00:00.000Z');
  const noTrial = await createSubscription(app, { planId: plan.id, trialPeriodDays: 0 });
  assert.equal(noTrial.status, 'incomplete');
  assert.equal(noTrial.trial_end, null);
});

test('create for an unknown customer or plan is 404 naming it, and stores nothing', async (t) => {
  const app = await buildTestApp(t);
  const customer = await createCustomer(app);
  const plan = await createPlan(app);
  const cases: [Record<string, string>, string][] = [
    [
      { customer_id: 'cus_01JD3Q7Z8X9Y0A1B2C3D4E5F6G', plan_id: plan.id },
      'customer cus_01JD3Q7Z8X9Y0A1B2C3D4E5F6G not found',
    ],
    [{ customer_id: 'bogus', plan_id: plan.id }, 'customer bogus not found'],
    [
      { customer_id: customer.id, plan_id: 'plan_01JD3Q7Z8X9Y0A1B2C3D4E5F6G' },
      'plan plan_01JD3Q7Z8X9Y0A1B2C3D4E5F6G not found',
    ],
    [{ customer_id: customer.id, plan_id: customer.id }, `plan ${customer.id} not found`],
  ];
  for (const [body, message] of cases) {
    const res = await app.request('POST', '/api/subscriptions', { body });
    assert.equal(res.status, 404, message);
    assert.deepEqual(res.body, { code: 'not_found', message, details: null });
  }
  await app.request('DELETE', `/api/customers/${customer.id}`);
  const deleted = await app.request('POST', '/api/subscriptions', {
    body: { customer_id: customer.id, plan_id: plan.id },
  });
  assert.equal(deleted.status, 404, 'a deleted customer takes no subscription');
  assert.equal((await app.request('GET', '/api/subscriptions')).body.meta.total, 0);
  assert.equal((await app.request('GET', '/api/events?topic=subscription.created')).body.meta.total, 0);
});

test('create on an archived plan is 422 invalid_state and stores nothing', async (t) => {
  const app = await buildTestApp(t);
  const customer = await createCustomer(app);
  const plan = await createPlan(app);
  await app.request('PATCH', `/api/plans/${plan.id}`, { body: { active: false } });
  const res = await app.request('POST', '/api/subscriptions', {
    body: { customer_id: customer.id, plan_id: plan.id },
  });
  assert.equal(res.status, 422);
  assert.equal(res.body.code, 'invalid_state');
  assert.match(res.body.message, new RegExp(plan.id));
  assert.equal(res.body.details, null);
  assert.equal((await app.request('GET', '/api/subscriptions')).body.meta.total, 0);
  assert.equal((await app.request('GET', '/api/events?topic=subscription.created')).body.meta.total, 0);
});

test('create rejects bad bodies with 400', async (t) => {
  const app = await buildTestApp(t);
  const customer = await createCustomer(app);
  const plan = await createPlan(app);
  const cases: [unknown, string][] = [
    [{ plan_id: plan.id }, 'customer_id is required'],
    [{ customer_id: customer.id }, 'plan_id is required'],
    [{ customer_id: customer.id, plan_id: plan.id, trial_period_days: -1 }, 'trial_period_days must be at least 0'],
    [{ customer_id: customer.id, plan_id: plan.id, trial_period_days: 1.5 }, 'trial_period_days must be an integer'],
    [{ customer_id: customer.id, plan_id: plan.id, status: 'active' }, 'status is not a known field'],
  ];
  for (const [body, message] of cases) {
    const res = await app.request('POST', '/api/subscriptions', { body });
    assert.equal(res.status, 400, JSON.stringify(body));
    assert.equal(res.body.message, message);
  }
  assert.equal((await app.request('GET', '/api/subscriptions')).body.meta.total, 0);
});

test('list filters by customer_id and status; an unknown status is 400', async (t) => {
  const app = await buildTestApp(t);
  const alice = await createCustomer(app);
  const bob = await createCustomer(app);
  const plan = await createPlan(app);
  const a1 = await createSubscription(app, { customerId: alice.id, planId: plan.id });
  app.clock.advance(1000);
  const a2 = await createSubscription(app, { customerId: alice.id, planId: plan.id, trialPeriodDays: 5 });
  app.clock.advance(1000);
  const b1 = await createSubscription(app, { customerId: bob.id, planId: plan.id });
  const ids = async (query: string) => {
    const res = await app.request('GET', `/api/subscriptions?${query}`);
    assert.equal(res.status, 200, query);
    return { ids: res.body.data.map((s: { id: string }) => s.id), total: res.body.meta.total };
  };
  assert.deepEqual(await ids(''), { ids: [b1.id, a2.id, a1.id], total: 3 });
  assert.deepEqual(await ids(`customer_id=${alice.id}`), { ids: [a2.id, a1.id], total: 2 });
  assert.deepEqual(await ids('status=incomplete'), { ids: [b1.id, a1.id], total: 2 });
  assert.deepEqual(await ids(`customer_id=${alice.id}&status=incomplete`), { ids: [a1.id], total: 1 });
  assert.deepEqual(await ids('status=cancelled'), { ids: [], total: 0 });
  assert.deepEqual(await ids('customer_id=cus_01JD3Q7Z8X9Y0A1B2C3D4E5F6G'), { ids: [], total: 0 });
  assert.deepEqual(await ids('sort_by=status&sort_order=asc'), { ids: [a1.id, b1.id, a2.id], total: 3 });
  for (const query of ['status=bogus', 'status=', 'sort_by=plan_id']) {
    const res = await app.request('GET', `/api/subscriptions?${query}`);
    assert.equal(res.status, 400, query);
    assert.equal(res.body.code, 'validation_error');
  }
  const bad = await app.request('GET', '/api/subscriptions?status=bogus');
  assert.equal(
    bad.body.message,
    'status must be one of: incomplete, incomplete_expired, trialing, active, past_due, unpaid, paused, cancelled',
  );
});

test('get, cancel, pause and resume of unknown or malformed ids are 404', async (t) => {
  const app = await buildTestApp(t);
  for (const id of [UNKNOWN_SUB, 'nope', 'cus_01JD3Q7Z8X9Y0A1B2C3D4E5F6G']) {
    const got = await app.request('GET', `/api/subscriptions/${id}`);
    assert.equal(got.status, 404, id);
    assert.equal(got.body.code, 'not_found');
    for (const action of ['cancel', 'pause', 'resume']) {
      const res = await app.request('PUT', `/api/subscriptions/${id}/${action}`, { body: {} });
      assert.equal(res.status, 404, `${action} ${id}`);
      assert.equal(res.body.code, 'not_found');
    }
  }
});

test('cancel with an empty object body cancels at once: cancelled_at = ended_at = now, reason requested', async (t) => {
  const app = await buildTestApp(t);
  const sub = await createSubscription(app);
  app.clock.advance(5 * 60_000);
  const res = await app.request('PUT', `/api/subscriptions/${sub.id}/cancel`, { body: {} });
  assert.equal(res.status, 200);
  assert.deepEqual(res.body, {
    ...sub,
    status: 'cancelled',
    entitled: false,
    cancelled_at: '2026-01-15T10:05:00.000Z',
    ended_at: '2026-01-15T10:05:00.000Z',
    cancellation_reason: 'requested',
    updated_at: '2026-01-15T10:05:00.000Z',
  });
  assert.deepEqual((await app.request('GET', `/api/subscriptions/${sub.id}`)).body, res.body);
  const events = await app.request('GET', '/api/events?topic=subscription.cancelled');
  assert.equal(events.body.meta.total, 1);
  assert.deepEqual(events.body.data[0].data, res.body);
});

test('cancel with no body at all cancels at once', async (t) => {
  const app = await buildTestApp(t);
  const sub = await createSubscription(app, { trialPeriodDays: 7 });
  const res = await app.request('PUT', `/api/subscriptions/${sub.id}/cancel`);
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.status, 'cancelled');
  assert.equal(res.body.ended_at, NOW);
});

test('cancel with Content-Type: application/json and no body cancels at once', async (t) => {
  const app = await buildTestApp(t);
  for (const rawBody of [undefined, '']) {
    const sub = await activeSubscription(app);
    const res = await app.request('PUT', `/api/subscriptions/${sub.id}/cancel`, {
      headers: { 'content-type': 'application/json' },
      ...(rawBody === undefined ? {} : { rawBody }),
    });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.status, 'cancelled');
  }
  assert.equal((await app.request('GET', '/api/events?topic=subscription.cancelled')).body.meta.total, 2);
});

test('cancel keeps the comment as cancellation_comment; bad cancel bodies are 400 and change nothing', async (t) => {
  const app = await buildTestApp(t);
  const sub = await createSubscription(app);
  const cases: [unknown, string][] = [
    [{ at_period_end: 'yes' }, 'at_period_end must be a boolean (true or false)'],
    [{ comment: 'x'.repeat(501) }, 'comment must be at most 500 characters'],
    [{ reason: 'because' }, 'reason is not a known field'],
    [[], 'Request body must be an object or null'],
  ];
  for (const [body, message] of cases) {
    const res = await app.request('PUT', `/api/subscriptions/${sub.id}/cancel`, { body });
    assert.equal(res.status, 400, JSON.stringify(body));
    assert.equal(res.body.message, message);
  }
  const text = await app.request('PUT', `/api/subscriptions/${sub.id}/cancel`, {
    rawBody: 'at_period_end=true',
    headers: { 'content-type': 'text/plain' },
  });
  assert.equal(text.status, 415);
  assert.equal((await app.request('GET', `/api/subscriptions/${sub.id}`)).body.status, 'incomplete');
  const res = await app.request('PUT', `/api/subscriptions/${sub.id}/cancel`, {
    body: { comment: 'too expensive' },
  });
  assert.equal(res.status, 200);
  assert.equal(res.body.cancellation_comment, 'too expensive');
  assert.equal(res.body.cancellation_reason, 'requested');
});

test('cancel with at_period_end flags an active subscription, which stays active and entitled', async (t) => {
  const app = await buildTestApp(t);
  const sub = await activeSubscription(app);
  app.clock.advance(HOUR);
  const res = await app.request('PUT', `/api/subscriptions/${sub.id}/cancel`, {
    body: { at_period_end: true, comment: 'moving on' },
  });
  assert.equal(res.status, 200);
  assert.deepEqual(res.body, {
    ...sub,
    cancel_at_period_end: true,
    cancelled_at: '2026-01-15T11:00:00.000Z',
    cancellation_reason: 'requested',
    cancellation_comment: 'moving on',
    updated_at: '2026-01-15T11:00:00.000Z',
  });
  assert.equal(res.body.status, 'active');
  assert.equal(res.body.entitled, true);
  assert.equal(res.body.ended_at, null);
  assert.deepEqual(await topics(app), [
    'subscription.created',
    'subscription.updated', // incomplete → active
    'subscription.updated', // flagged
  ]);

  // Asking again changes nothing and emits nothing.
  app.clock.advance(HOUR);
  const again = await app.request('PUT', `/api/subscriptions/${sub.id}/cancel`, {
    body: { at_period_end: true },
  });
  assert.equal(again.status, 200);
  assert.deepEqual(again.body, res.body);
  assert.equal((await topics(app)).length, 3);

  // An immediate cancel of a flagged subscription ends it now and clears the flag.
  const now = await app.request('PUT', `/api/subscriptions/${sub.id}/cancel`);
  assert.equal(now.status, 200);
  assert.equal(now.body.status, 'cancelled');
  assert.equal(now.body.cancel_at_period_end, false);
  assert.equal(now.body.ended_at, '2026-01-15T12:00:00.000Z');
  assert.equal(now.body.cancellation_comment, 'moving on');
});

test('cancel with at_period_end flags a trialing subscription', async (t) => {
  const app = await buildTestApp(t);
  const sub = await createSubscription(app, { trialPeriodDays: 14 });
  const res = await app.request('PUT', `/api/subscriptions/${sub.id}/cancel`, {
    body: { at_period_end: true },
  });
  assert.equal(res.status, 200);
  assert.equal(res.body.status, 'trialing');
  assert.equal(res.body.cancel_at_period_end, true);
  assert.equal(res.body.current_period_end, sub.current_period_end);
});

test('cancel with at_period_end is 409 from incomplete, past_due, unpaid and paused, and changes nothing', async (t) => {
  const app = await buildTestApp(t);
  const incomplete = await createSubscription(app);
  const pastDue = await failPayment(app, (await activeSubscription(app)).id);
  assert.equal(pastDue.status, 'past_due');
  const unpaid = await unpaidSubscription(app);
  assert.equal(unpaid.status, 'unpaid');
  const paused = (await app.request('PUT', `/api/subscriptions/${(await activeSubscription(app)).id}/pause`)).body;
  assert.equal(paused.status, 'paused');
  const before = await topics(app);
  for (const sub of [incomplete, pastDue, unpaid, paused]) {
    const res = await app.request('PUT', `/api/subscriptions/${sub.id}/cancel`, {
      body: { at_period_end: true },
    });
    assert.equal(res.status, 409, sub.status);
    assert.deepEqual(res.body, CANNOT_CANCEL_BODY);
    assert.deepEqual((await app.request('GET', `/api/subscriptions/${sub.id}`)).body, sub);
  }
  assert.deepEqual(await topics(app), before);
  // …while an immediate cancel of past_due works (no free period handed out).
  const now = await app.request('PUT', `/api/subscriptions/${pastDue.id}/cancel`, { body: {} });
  assert.equal(now.status, 200);
  assert.equal(now.body.status, 'cancelled');
});

test('cancel of a cancelled subscription is 409 with the exact body, and emits nothing', async (t) => {
  const app = await buildTestApp(t);
  const sub = await createSubscription(app);
  const first = await app.request('PUT', `/api/subscriptions/${sub.id}/cancel`);
  assert.equal(first.status, 200);
  app.clock.advance(1000);
  for (const body of [undefined, {}, { at_period_end: true }, { comment: 'again' }]) {
    const res = await app.request('PUT', `/api/subscriptions/${sub.id}/cancel`, { body });
    assert.equal(res.status, 409, JSON.stringify(body));
    assert.equal(res.text, JSON.stringify(CANNOT_CANCEL_BODY));
  }
  assert.deepEqual((await app.request('GET', `/api/subscriptions/${sub.id}`)).body, first.body);
  assert.equal((await app.request('GET', '/api/events?topic=subscription.cancelled')).body.meta.total, 1);
});

test('cancel of an incomplete_expired subscription is 409 with the exact body', async (t) => {
  const app = await buildTestApp(t);
  const sub = await createSubscription(app);
  app.clock.advance(23 * HOUR);
  await runWorker(app);
  const expired = (await app.request('GET', `/api/subscriptions/${sub.id}`)).body;
  assert.equal(expired.status, 'incomplete_expired');
  const before = await topics(app);
  for (const body of [undefined, {}, { at_period_end: true }]) {
    const res = await app.request('PUT', `/api/subscriptions/${sub.id}/cancel`, { body });
    assert.equal(res.status, 409);
    assert.equal(res.text, JSON.stringify(CANNOT_CANCEL_BODY));
  }
  assert.deepEqual((await app.request('GET', `/api/subscriptions/${sub.id}`)).body, expired);
  assert.deepEqual(await topics(app), before);
});

test('every non-terminal state cancels at once with subscription.cancelled', async (t) => {
  const app = await buildTestApp(t);
  const incomplete = await createSubscription(app);
  const trialing = await createSubscription(app, { trialPeriodDays: 3 });
  const active = await activeSubscription(app);
  const pastDue = await failPayment(app, (await activeSubscription(app)).id);
  const unpaid = await unpaidSubscription(app);
  const paused = (await app.request('PUT', `/api/subscriptions/${(await activeSubscription(app)).id}/pause`)).body;
  const states = [incomplete, trialing, active, pastDue, unpaid, paused];
  assert.deepEqual(
    states.map((s) => s.status),
    ['incomplete', 'trialing', 'active', 'past_due', 'unpaid', 'paused'],
  );
  for (const sub of states) {
    const res = await app.request('PUT', `/api/subscriptions/${sub.id}/cancel`);
    assert.equal(res.status, 200, sub.status);
    assert.equal(res.body.status, 'cancelled');
    assert.equal(res.body.entitled, false);
  }
  assert.equal((await app.request('GET', '/api/events?topic=subscription.cancelled')).body.meta.total, 6);
});

test('pause moves active to paused (not entitled) with subscription.updated', async (t) => {
  const app = await buildTestApp(t);
  const sub = await activeSubscription(app);
  app.clock.advance(DAY);
  const res = await app.request('PUT', `/api/subscriptions/${sub.id}/pause`);
  assert.equal(res.status, 200);
  assert.deepEqual(res.body, {
    ...sub,
    status: 'paused',
    entitled: false,
    updated_at: '2026-01-16T10:00:00.000Z',
  });
  const events = await app.request('GET', '/api/events?limit=1');
  assert.equal(events.body.data[0].topic, 'subscription.updated');
  assert.deepEqual(events.body.data[0].data, res.body);
});

test('pause is 409 validation_error from every state but active, and changes nothing', async (t) => {
  const app = await buildTestApp(t);
  const incomplete = await createSubscription(app);
  const trialing = await createSubscription(app, { trialPeriodDays: 3 });
  const pastDue = await failPayment(app, (await activeSubscription(app)).id);
  const unpaid = await unpaidSubscription(app);
  const paused = (await app.request('PUT', `/api/subscriptions/${(await activeSubscription(app)).id}/pause`)).body;
  const cancelled = (await app.request('PUT', `/api/subscriptions/${(await createSubscription(app)).id}/cancel`)).body;
  const before = await topics(app);
  for (const sub of [incomplete, trialing, pastDue, unpaid, paused, cancelled]) {
    const res = await app.request('PUT', `/api/subscriptions/${sub.id}/pause`);
    assert.equal(res.status, 409, sub.status);
    assert.equal(res.body.code, 'validation_error');
    assert.match(res.body.message, /cannot be paused/);
    assert.deepEqual((await app.request('GET', `/api/subscriptions/${sub.id}`)).body, sub);
  }
  assert.deepEqual(await topics(app), before);
});

test('resume moves paused to active with its payment due now (period restarts now)', async (t) => {
  const app = await buildTestApp(t);
  const sub = await activeSubscription(app);
  await app.request('PUT', `/api/subscriptions/${sub.id}/pause`);
  app.clock.advance(10 * DAY);
  const res = await app.request('PUT', `/api/subscriptions/${sub.id}/resume`);
  assert.equal(res.status, 200);
  assert.equal(res.body.status, 'active');
  assert.equal(res.body.entitled, true);
  assert.equal(res.body.current_period_start, '2026-01-25T10:00:00.000Z');
  assert.equal(res.body.current_period_end, '2026-01-25T10:00:00.000Z');
  assert.equal(res.body.updated_at, '2026-01-25T10:00:00.000Z');
  assert.deepEqual((await topics(app)).slice(-2), ['subscription.updated', 'subscription.updated']);
});

test('resume undoes a pending period-end cancel, keeping the status and period', async (t) => {
  const app = await buildTestApp(t);
  for (const start of [await activeSubscription(app), await createSubscription(app, { trialPeriodDays: 7 })]) {
    await app.request('PUT', `/api/subscriptions/${start.id}/cancel`, {
      body: { at_period_end: true, comment: 'maybe' },
    });
    app.clock.advance(HOUR);
    const res = await app.request('PUT', `/api/subscriptions/${start.id}/resume`);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, {
      ...start,
      updated_at: app.clock.now().toISOString(),
    });
    assert.equal(res.body.cancel_at_period_end, false);
    assert.equal(res.body.cancelled_at, null);
    assert.equal(res.body.cancellation_reason, null);
    assert.equal(res.body.cancellation_comment, null);
    const last = (await app.request('GET', '/api/events?limit=1')).body.data[0];
    assert.equal(last.topic, 'subscription.updated');
    assert.deepEqual(last.data, res.body);
  }
});

test('resume is 409 validation_error without a pause or a pending cancel, and changes nothing', async (t) => {
  const app = await buildTestApp(t);
  const incomplete = await createSubscription(app);
  const trialing = await createSubscription(app, { trialPeriodDays: 3 });
  const active = await activeSubscription(app);
  const pastDue = await failPayment(app, (await activeSubscription(app)).id);
  const unpaid = await unpaidSubscription(app);
  const cancelled = (await app.request('PUT', `/api/subscriptions/${(await createSubscription(app)).id}/cancel`)).body;
  const before = await topics(app);
  for (const sub of [incomplete, trialing, active, pastDue, unpaid, cancelled]) {
    const res = await app.request('PUT', `/api/subscriptions/${sub.id}/resume`);
    assert.equal(res.status, 409, sub.status);
    assert.equal(res.body.code, 'validation_error');
    assert.match(res.body.message, /cannot be resumed/);
    assert.deepEqual((await app.request('GET', `/api/subscriptions/${sub.id}`)).body, sub);
  }
  assert.deepEqual(await topics(app), before);
});

test('a customer with a live subscription cannot be deleted (409 conflict); once cancelled it can (204)', async (t) => {
  const app = await buildTestApp(t);
  const customer = await createCustomer(app);
  const sub = await createSubscription(app, { customerId: customer.id });
  const blocked = await app.request('DELETE', `/api/customers/${customer.id}`);
  assert.equal(blocked.status, 409);
  assert.equal(blocked.body.code, 'conflict');
  assert.equal((await app.request('GET', `/api/customers/${customer.id}`)).status, 200);
  assert.equal((await app.request('GET', '/api/events?topic=customer.deleted')).body.meta.total, 0);
  await app.request('PUT', `/api/subscriptions/${sub.id}/cancel`);
  const deleted = await app.request('DELETE', `/api/customers/${customer.id}`);
  assert.equal(deleted.status, 204);
});

test('a customer whose only subscription expired can be deleted', async (t) => {
  const app = await buildTestApp(t);
  const customer = await createCustomer(app);
  await createSubscription(app, { customerId: customer.id });
  app.clock.advance(24 * HOUR);
  await runWorker(app);
  assert.equal((await app.request('DELETE', `/api/customers/${customer.id}`)).status, 204);
});

test('a customer deleted while a subscription is created for it: one of the two loses, never a live subscription of a deleted customer', async (t) => {
  const app = await buildTestApp(t);
  const plan = await createPlan(app);
  const customers = await Promise.all(Array.from({ length: 10 }, () => createCustomer(app)));
  const pairs = await Promise.all(
    customers.map((customer) =>
      Promise.all([
        app.request('DELETE', `/api/customers/${customer.id}`),
        app.request('POST', '/api/subscriptions', { body: { customer_id: customer.id, plan_id: plan.id } }),
      ]),
    ),
  );
  for (const [i, [deleted, created]] of pairs.entries()) {
    const outcome = `pair ${i}: delete ${deleted.status} ${deleted.text}, create ${created.status} ${created.text}`;
    if (deleted.status === 204) {
      assert.equal(created.status, 404, outcome);
      assert.equal(created.body.code, 'not_found', outcome);
    } else {
      assert.equal(deleted.status, 409, outcome);
      assert.equal(deleted.body.code, 'conflict', outcome);
      assert.equal(created.status, 201, outcome);
    }
  }
  const orphans = await app.deps.db
    .selectFrom('subscriptions as s')
    .innerJoin('customers as c', 'c.id', 's.customer_id')
    .select('s.id')
    .where('c.deleted_at', 'is not', null)
    .where('s.status', 'not in', ['cancelled', 'incomplete_expired'])
    .execute();
  assert.deepEqual(orphans, []);
});

test('concurrent cancels of one subscription: exactly one 200, the rest 409, one subscription.cancelled', async (t) => {
  const app = await buildTestApp(t);
  for (const variant of [{}, { at_period_end: true }] as const) {
    const sub = await activeSubscription(app);
    const before = (await topics(app)).length;
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        app.request('PUT', `/api/subscriptions/${sub.id}/cancel`, {
          body: i % 2 === 0 ? {} : variant,
        }),
      ),
    );
    const statuses = results.map((r) => r.status).sort();
    if (variant.at_period_end) {
      // Whichever comes first wins; a flag after a cancel is 409, a cancel after a flag is 200.
      assert.equal(statuses.filter((s) => s === 200).length >= 1, true);
    } else {
      assert.deepEqual(statuses, [200, 409, 409, 409, 409, 409, 409, 409]);
      for (const r of results.filter((r) => r.status === 409)) assert.deepEqual(r.body, CANNOT_CANCEL_BODY);
    }
    const final = (await app.request('GET', `/api/subscriptions/${sub.id}`)).body;
    assert.equal(final.status, 'cancelled');
    const added = (await topics(app)).slice(before);
    assert.equal(added.filter((topic) => topic === 'subscription.cancelled').length, 1, JSON.stringify(added));
  }
  const events = await app.request('GET', '/api/events?topic=subscription.cancelled');
  assert.equal(events.body.meta.total, 2);
});

test('a repeated period-end cancel with a new comment keeps the first request time and records the comment', async (t) => {
  const app = await buildTestApp(t);
  const sub = await createSubscription(app, { trialPeriodDays: 14 });
  const first = await app.request('PUT', `/api/subscriptions/${sub.id}/cancel`, {
    body: { at_period_end: true, comment: 'too pricey' },
  });
  app.clock.advance(60_000);
  const same = await app.request('PUT', `/api/subscriptions/${sub.id}/cancel`, {
    body: { at_period_end: true, comment: 'too pricey' },
  });
  assert.deepEqual(same.body, first.body);
  const again = await app.request('PUT', `/api/subscriptions/${sub.id}/cancel`, {
    body: { at_period_end: true, comment: 'found another tool' },
  });
  assert.equal(again.status, 200);
  assert.equal(again.body.cancellation_comment, 'found another tool');
  assert.equal(again.body.cancelled_at, first.body.cancelled_at);
  assert.equal(again.body.cancel_at_period_end, true);
});
