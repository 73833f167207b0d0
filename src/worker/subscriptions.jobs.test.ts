import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, type TestApp, connectSecondInstance } from '../../test/helpers/app.ts';
import { ON_POSTGRES } from '../../test/helpers/database.ts';
import { createCustomer, createPlan, createSubscription } from '../../test/helpers/factories.ts';
import type { Deps } from '../deps.ts';
import { JOBS } from './jobs.ts';
import { Worker } from './runner.ts';
import { markUnpaidRenewalsPastDue } from './subscriptions.jobs.ts';
import { applySuccessfulPayment } from '../billing/subscription-payments.ts';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const TTL = 23 * HOUR; // SUBSCRIPTION_INCOMPLETE_TTL default
const GRACE = HOUR; // RENEWAL_GRACE default

const SUBSCRIPTION_JOBS = [
  'expire_incomplete_subscriptions',
  'apply_period_end_cancellations',
  'mark_unpaid_renewals_past_due',
] as const;

/**
 * One worker tick over every job; a failing job fails the test instead of being logged and
 * skipped. Returns what this module's jobs handled (other modules' jobs run but are not counted).
 */
async function runWorker(deps: Deps) {
  const log = {
    error: (object: object) => assert.fail(`worker job failed: ${String(Object.values(object)[0])}`),
  };
  const handled = await new Worker(deps, JOBS, log).runOnce();
  return Object.fromEntries(SUBSCRIPTION_JOBS.map((name) => [name, handled[name] ?? 0]));
}

function pay(app: TestApp, id: string) {
  return app.deps.db.transaction().execute((trx) => applySuccessfulPayment(trx, app.deps, id));
}

/** The instant `offset` ms after `iso` (a period or trial end, which must be set). */
function after(iso: string | null, offset = 0): Date {
  assert.ok(iso, 'expected a timestamp');
  return new Date(Date.parse(iso) + offset);
}

async function get(app: TestApp, id: string) {
  return (await app.request('GET', `/api/subscriptions/${id}`)).body;
}

/** Subscription event topics so far, oldest first. */
async function topics(app: TestApp): Promise<string[]> {
  const res = await app.request('GET', '/api/events?limit=100&sort_order=asc');
  return res.body.data
    .map((e: { topic: string }) => e.topic)
    .filter((topic: string) => topic.startsWith('subscription.'));
}

test('an incomplete subscription expires SUBSCRIPTION_INCOMPLETE_TTL after creation, not before', async (t) => {
  const app = await buildTestApp(t);
  const sub = await createSubscription(app);
  app.clock.advance(TTL - 1);
  assert.equal((await runWorker(app.deps)).expire_incomplete_subscriptions, 0);
  assert.deepEqual(await get(app, sub.id), sub);
  app.clock.advance(1);
  assert.equal((await runWorker(app.deps)).expire_incomplete_subscriptions, 1);
  const expired = await get(app, sub.id);
  assert.deepEqual(expired, {
    ...sub,
    status: 'incomplete_expired',
    entitled: false,
    ended_at: '2026-01-16T09:00:00.000Z',
    cancellation_reason: 'incomplete_expired',
    updated_at: '2026-01-16T09:00:00.000Z',
  });
  assert.equal(expired.cancelled_at, null);
  const events = await app.request('GET', '/api/events?limit=1');
  assert.equal(events.body.data[0].topic, 'subscription.updated');
  assert.deepEqual(events.body.data[0].data, expired);
});

test('SUBSCRIPTION_INCOMPLETE_TTL is read from the configuration', async (t) => {
  const app = await buildTestApp(t, { env: { SUBSCRIPTION_INCOMPLETE_TTL: '2h' } });
  const sub = await createSubscription(app);
  app.clock.advance(2 * HOUR - 1);
  await runWorker(app.deps);
  assert.equal((await get(app, sub.id)).status, 'incomplete');
  app.clock.advance(1);
  await runWorker(app.deps);
  assert.equal((await get(app, sub.id)).status, 'incomplete_expired');
});

test('expiry leaves paid, trialing and cancelled subscriptions alone', async (t) => {
  const app = await buildTestApp(t);
  const paid = await pay(app, (await createSubscription(app)).id);
  const trialing = await createSubscription(app, { trialPeriodDays: 30 });
  const cancelled = (await app.request('PUT', `/api/subscriptions/${(await createSubscription(app)).id}/cancel`)).body;
  const before = await topics(app);
  app.clock.advance(TTL + DAY);
  assert.equal((await runWorker(app.deps)).expire_incomplete_subscriptions, 0);
  for (const sub of [paid, trialing, cancelled]) assert.deepEqual(await get(app, sub.id), sub);
  assert.deepEqual(await topics(app), before);
});

test('an active subscription unpaid RENEWAL_GRACE after current_period_end becomes past_due, not before', async (t) => {
  const app = await buildTestApp(t);
  const sub = await pay(app, (await createSubscription(app)).id);
  assert.equal(sub.current_period_end, '2026-02-15T10:00:00.000Z');
  app.clock.set(after(sub.current_period_end, GRACE - 1));
  assert.equal((await runWorker(app.deps)).mark_unpaid_renewals_past_due, 0);
  assert.equal((await get(app, sub.id)).status, 'active');
  app.clock.advance(1);
  assert.equal((await runWorker(app.deps)).mark_unpaid_renewals_past_due, 1);
  const pastDue = await get(app, sub.id);
  // The renewal moved it into its next period (SPEC §4), paid or not.
  assert.deepEqual(pastDue, {
    ...sub,
    status: 'past_due',
    current_period_start: '2026-02-15T10:00:00.000Z',
    current_period_end: '2026-03-15T10:00:00.000Z',
    updated_at: '2026-02-15T11:00:00.000Z',
  });
  assert.equal(pastDue.entitled, true);
  const events = await app.request('GET', '/api/events?limit=1&topic=subscription.past_due');
  assert.equal(events.body.data[0].topic, 'subscription.past_due');
  assert.deepEqual(events.body.data[0].data, pastDue);
});

test('RENEWAL_GRACE is read from the configuration (0 = past_due right at period end)', async (t) => {
  const app = await buildTestApp(t, { env: { RENEWAL_GRACE: '0ms' } });
  const sub = await pay(app, (await createSubscription(app)).id);
  app.clock.set(after(sub.current_period_end, -1));
  await runWorker(app.deps);
  assert.equal((await get(app, sub.id)).status, 'active');
  app.clock.advance(1);
  await runWorker(app.deps);
  assert.equal((await get(app, sub.id)).status, 'past_due');
});

test('a renewal paid in time keeps the subscription active', async (t) => {
  const app = await buildTestApp(t);
  const sub = await pay(app, (await createSubscription(app)).id);
  app.clock.set(new Date('2026-02-15T10:30:00.000Z'));
  await pay(app, sub.id);
  app.clock.advance(GRACE);
  assert.equal((await runWorker(app.deps)).mark_unpaid_renewals_past_due, 0);
  assert.equal((await get(app, sub.id)).status, 'active');
});

test('a trialing subscription unpaid RENEWAL_GRACE after trial_end becomes past_due', async (t) => {
  const app = await buildTestApp(t);
  const sub = await createSubscription(app, { trialPeriodDays: 14 });
  app.clock.set(after(sub.trial_end, GRACE - 1));
  await runWorker(app.deps);
  assert.equal((await get(app, sub.id)).status, 'trialing');
  app.clock.advance(1);
  await runWorker(app.deps);
  const pastDue = await get(app, sub.id);
  assert.equal(pastDue.status, 'past_due');
  assert.equal(pastDue.trial_end, sub.trial_end);
  assert.deepEqual((await topics(app)).slice(-1), ['subscription.past_due']);
});

test('a period-end cancel applies at current_period_end: cancelled, ended_at = period end, reason requested', async (t) => {
  const app = await buildTestApp(t);
  const sub = await pay(app, (await createSubscription(app)).id);
  app.clock.advance(DAY);
  const flagged = (
    await app.request('PUT', `/api/subscriptions/${sub.id}/cancel`, {
      body: { at_period_end: true, comment: 'bye' },
    })
  ).body;
  app.clock.set(after(sub.current_period_end, -1));
  assert.equal((await runWorker(app.deps)).apply_period_end_cancellations, 0);
  assert.deepEqual(await get(app, sub.id), flagged);
  // The worker runs late (past the grace too): the end is still the period end, and the
  // flagged subscription is cancelled, never marked past_due.
  app.clock.advance(3 * HOUR);
  const handled = await runWorker(app.deps);
  assert.equal(handled.apply_period_end_cancellations, 1);
  assert.equal(handled.mark_unpaid_renewals_past_due, 0);
  const cancelled = await get(app, sub.id);
  assert.deepEqual(cancelled, {
    ...flagged,
    status: 'cancelled',
    entitled: false,
    cancel_at_period_end: false,
    ended_at: '2026-02-15T10:00:00.000Z',
    cancelled_at: '2026-01-16T10:00:00.000Z',
    cancellation_reason: 'requested',
    cancellation_comment: 'bye',
    updated_at: '2026-02-15T12:59:59.999Z',
  });
  const events = await app.request('GET', '/api/events?topic=subscription.cancelled');
  assert.equal(events.body.meta.total, 1);
  assert.deepEqual(events.body.data[0].data, cancelled);
  assert.equal((await app.request('GET', '/api/events?topic=subscription.past_due')).body.meta.total, 0);
});

test('the unpaid-renewal job leaves a subscription flagged to cancel at period end to the cancel job', async (t) => {
  const app = await buildTestApp(t);
  const sub = await pay(app, (await createSubscription(app)).id);
  const flagged = (await app.request('PUT', `/api/subscriptions/${sub.id}/cancel`, { body: { at_period_end: true } }))
    .body;
  app.clock.set(after(sub.current_period_end, 2 * GRACE));
  assert.equal(await markUnpaidRenewalsPastDue.run(app.deps), 0);
  assert.deepEqual(await get(app, sub.id), flagged);
});

test('a period-end cancel of a trialing subscription applies at trial end', async (t) => {
  const app = await buildTestApp(t);
  const sub = await createSubscription(app, { trialPeriodDays: 7 });
  await app.request('PUT', `/api/subscriptions/${sub.id}/cancel`, { body: { at_period_end: true } });
  app.clock.set(after(sub.trial_end));
  await runWorker(app.deps);
  const cancelled = await get(app, sub.id);
  assert.equal(cancelled.status, 'cancelled');
  assert.equal(cancelled.ended_at, sub.trial_end);
});

test('a resumed (un-flagged) subscription is not cancelled at period end', async (t) => {
  const app = await buildTestApp(t);
  const sub = await pay(app, (await createSubscription(app)).id);
  await app.request('PUT', `/api/subscriptions/${sub.id}/cancel`, { body: { at_period_end: true } });
  await app.request('PUT', `/api/subscriptions/${sub.id}/resume`);
  app.clock.set(after(sub.current_period_end));
  assert.equal((await runWorker(app.deps)).apply_period_end_cancellations, 0);
  assert.equal((await get(app, sub.id)).status, 'active');
});

test('paused subscriptions are untouched by every job', async (t) => {
  const app = await buildTestApp(t);
  const paused = (
    await app.request('PUT', `/api/subscriptions/${(await pay(app, (await createSubscription(app)).id)).id}/pause`)
  ).body;
  const before = await topics(app);
  app.clock.advance(365 * DAY);
  const handled = await runWorker(app.deps);
  assert.deepEqual(handled, {
    expire_incomplete_subscriptions: 0,
    apply_period_end_cancellations: 0,
    mark_unpaid_renewals_past_due: 0,
  });
  assert.deepEqual(await get(app, paused.id), paused);
  assert.deepEqual(await topics(app), before);
});

test('a resumed subscription is due at once: unpaid RENEWAL_GRACE after resume it becomes past_due', async (t) => {
  const app = await buildTestApp(t);
  const sub = await pay(app, (await createSubscription(app)).id);
  await app.request('PUT', `/api/subscriptions/${sub.id}/pause`);
  app.clock.advance(40 * DAY);
  await app.request('PUT', `/api/subscriptions/${sub.id}/resume`);
  app.clock.advance(GRACE - 1);
  await runWorker(app.deps);
  assert.equal((await get(app, sub.id)).status, 'active');
  app.clock.advance(1);
  await runWorker(app.deps);
  assert.equal((await get(app, sub.id)).status, 'past_due');
});

test('a job run twice does nothing the second time', async (t) => {
  const app = await buildTestApp(t);
  await createSubscription(app); // expires
  const renewing = await pay(app, (await createSubscription(app)).id); // goes past_due
  const ending = await pay(app, (await createSubscription(app)).id); // cancels at period end
  await app.request('PUT', `/api/subscriptions/${ending.id}/cancel`, { body: { at_period_end: true } });
  app.clock.set(after(renewing.current_period_end, GRACE));
  assert.deepEqual(await runWorker(app.deps), {
    expire_incomplete_subscriptions: 1,
    apply_period_end_cancellations: 1,
    mark_unpaid_renewals_past_due: 1,
  });
  const afterFirstRun = await topics(app);
  assert.deepEqual(await runWorker(app.deps), {
    expire_incomplete_subscriptions: 0,
    apply_period_end_cancellations: 0,
    mark_unpaid_renewals_past_due: 0,
  });
  assert.deepEqual(await topics(app), afterFirstRun);
});

test('a backlog larger than one batch drains in one run', async (t) => {
  const app = await buildTestApp(t);
  const customer = await createCustomer(app);
  const plan = await createPlan(app);
  const count = 55; // batch size is 50
  for (let i = 0; i < count; i++) await createSubscription(app, { customerId: customer.id, planId: plan.id });
  app.clock.advance(TTL);
  assert.equal((await runWorker(app.deps)).expire_incomplete_subscriptions, count);
  const expired = await app.request('GET', '/api/subscriptions?status=incomplete_expired');
  assert.equal(expired.body.meta.total, count);
});

test(
  'two workers on two connections handle each due subscription exactly once',
  {
    skip: !ON_POSTGRES && 'PostgreSQL only: SQLite in memory cannot be opened by a second handle',
  },
  async (t) => {
    const app = await buildTestApp(t);
    const second = await connectSecondInstance(app);
    try {
      const customer = await createCustomer(app);
      const plan = await createPlan(app);
      const ids = { expire: [] as string[], pastDue: [] as string[], cancel: [] as string[] };
      for (let i = 0; i < 60; i++) {
        const sub = await createSubscription(app, { customerId: customer.id, planId: plan.id });
        if (i % 3 === 0) ids.expire.push(sub.id);
        else {
          await pay(app, sub.id);
          if (i % 3 === 1) ids.pastDue.push(sub.id);
          else {
            await app.request('PUT', `/api/subscriptions/${sub.id}/cancel`, { body: { at_period_end: true } });
            ids.cancel.push(sub.id);
          }
        }
      }
      app.clock.advance(45 * DAY);
      const [a, b] = await Promise.all([runWorker(app.deps), runWorker(second)]);
      for (const job of SUBSCRIPTION_JOBS) assert.equal((a[job] ?? 0) + (b[job] ?? 0), 20, job);

      const events = await app.deps.db
        .selectFrom('events')
        .select(['topic', 'data'])
        .where('created_at', '>=', app.clock.now().toISOString())
        .where('topic', 'like', 'subscription.%')
        .orderBy('id')
        .execute();
      const byId = new Map<string, string[]>();
      for (const event of events) {
        const id = JSON.parse(event.data).id as string;
        byId.set(id, [...(byId.get(id) ?? []), event.topic]);
      }
      assert.equal(events.length, 80);
      for (const id of ids.expire) assert.deepEqual(byId.get(id), ['subscription.updated'], id);
      // Renewed into its next period (subscription.updated), then past due on its unpaid invoice.
      for (const id of ids.pastDue) {
        assert.deepEqual(byId.get(id), ['subscription.updated', 'subscription.past_due'], id);
      }
      for (const id of ids.cancel) assert.deepEqual(byId.get(id), ['subscription.cancelled'], id);
    } finally {
      await second.close();
    }
  },
);
