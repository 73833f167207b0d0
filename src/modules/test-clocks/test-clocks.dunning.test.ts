// The read-only dunning lists for test clock customers (SPEC §11): what they compute from
// "now" — the past-due list's `days_overdue`, the `upcoming` horizon — uses the customer's
// clock time, as every write for that customer does.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';
import { createPlan } from '../../../test/helpers/factories.ts';
import { CLOCK_AWARE_JOBS } from '../../worker/jobs.ts';
import { Worker } from '../../worker/runner.ts';
import { advanceTestClocks } from '../../worker/test-clocks.jobs.ts';

const failLog = { error: (object: object) => assert.fail(`worker job failed: ${String(Object.values(object)[0])}`) };

// Years after the test app's real time (2026-01-15): real time would see nothing overdue yet.
const T0 = '2030-03-01T00:00:00.000Z';

/** A clock customer whose monthly subscription went past_due at its renewal (2030-04-01, + 1 h grace), advanced to `until`. */
async function pastDueOnClock(app: TestApp, until: string) {
  const clock = (await app.request('POST', '/api/test-clocks', { body: { frozen_time: T0 } })).body;
  const customer = await app.request('POST', '/api/customers', {
    body: { email: 'late@example.com', test_clock: clock.id },
  });
  const plan = await createPlan(app);
  const sub = await app.request('POST', '/api/subscriptions', {
    body: { customer_id: customer.body.id, plan_id: plan.id },
  });
  const [invoice] = (await app.request('GET', `/api/invoices?subscription_id=${sub.body.id}`)).body.data;
  await app.request('POST', `/api/invoices/${invoice.id}/pay`, { body: { paid_out_of_band: true } });
  const advance = await app.request('POST', `/api/test-clocks/${clock.id}/advance`, { body: { frozen_time: until } });
  assert.equal(advance.status, 202, advance.text);
  await new Worker(app.deps, [advanceTestClocks(CLOCK_AWARE_JOBS)], failLog).runOnce();
  assert.equal((await app.request('GET', `/api/subscriptions/${sub.body.id}`)).body.status, 'past_due');
  return { clockId: clock.id as string, subscriptionId: sub.body.id as string };
}

test("the past-due list counts a clock customer's days overdue by the clock's time", async (t) => {
  const app = await buildTestApp(t, { env: { TEST_CLOCKS: 'true' } });
  const { subscriptionId } = await pastDueOnClock(app, '2030-04-04T02:00:00.000Z');
  const [row] = (await app.request('GET', '/api/dunning/past-due')).body.data;
  assert.equal(row.subscription_id, subscriptionId);
  assert.equal(row.overdue_since, '2030-04-01T01:00:00.000Z');
  assert.equal(row.days_overdue, 3);
});

test("the upcoming list measures a clock customer's horizon from the clock's time", async (t) => {
  const app = await buildTestApp(t, { env: { TEST_CLOCKS: 'true' } });
  // Reminders went out at +1 and +3 days; the next is due at +7 days (2030-04-08T01:00).
  await pastDueOnClock(app, '2030-04-04T02:00:00.000Z');
  const week = (await app.request('GET', '/api/dunning/upcoming?within=7d')).body;
  assert.equal(week.total, 1);
  assert.equal(week.data[0].next_action_at, '2030-04-08T01:00:00.000Z');
  assert.equal(week.data[0].next_step, 3);
  const day = (await app.request('GET', '/api/dunning/upcoming?within=1d')).body;
  assert.equal(day.total, 0, 'four days away on its clock');
});
