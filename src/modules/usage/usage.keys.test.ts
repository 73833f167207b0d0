// Retention of usage duplicate-detection keys (SPEC §15 "Duplicates"), on both databases: a
// retry within the 35-day window is still a duplicate after the purge ran; keys older than the
// window plus a day go, in bounded batches, through the worker's job; a test clock's
// customers' keys (received in clock time) stay.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';
import { createCustomer } from '../../../test/helpers/factories.ts';
import { Worker } from '../../worker/runner.ts';
import { purgeUsageEventKeys } from '../../worker/usage.jobs.ts';
import { dueProbe } from '../../worker/runner.ts';
import { createMeter } from '../meters/meters.service.ts';
import { ingestUsageEvents } from './usage.ingest.ts';
import { purgeExpiredUsageKeys, USAGE_KEY_RETENTION_MS } from './usage.keys.ts';

const DAY = 86_400_000;
const failLog = { error: (object: object) => assert.fail(`worker job failed: ${String(Object.values(object)[0])}`) };

async function send(app: TestApp, customerId: string, transactionId: string, at: Date) {
  const [result] = await ingestUsageEvents(app.deps.db, app.deps.clock, [
    { transaction_id: transactionId, customer_id: customerId, event_name: 'api_call', timestamp: at.toISOString() },
  ]);
  return result!.status;
}

const keysOf = async (app: TestApp) =>
  (await app.deps.db.selectFrom('usage_event_keys').select('transaction_id').orderBy('transaction_id').execute()).map(
    (row) => row.transaction_id,
  );

test('a retry within the 35-day window stays a duplicate after the purge; keys past the window plus a day go, in batches', async (t) => {
  const app = await buildTestApp(t, { env: { TEST_CLOCKS: 'true' } });
  await createMeter(app.deps.db, app.deps.clock, {
    event_name: 'api_call',
    aggregation: 'count',
    display_name: 'Calls',
  });
  const customer = await createCustomer(app);
  const clock = (await app.request('POST', '/api/test-clocks', { body: { frozen_time: '2026-01-01T00:00:00.000Z' } }))
    .body;
  const clockCustomer = await createCustomer(app, { email: 'clock@example.com', test_clock: clock.id });
  const start = app.clock.now();
  for (const id of ['a', 'b', 'c']) assert.equal(await send(app, customer.id, id, start), 'accepted');
  assert.equal(await send(app, clockCustomer.id, 'clocked', new Date('2026-01-01T00:00:00.000Z')), 'accepted');
  const worker = new Worker(app.deps, [purgeUsageEventKeys], failLog);
  // The runner's probe (one statement for every job): whether the job has work now.
  const due = async () => {
    const row = (await dueProbe(app.deps, [purgeUsageEventKeys]).query!.executeTakeFirst()) as { j0: unknown };
    return Boolean(row.j0);
  };

  // 35 days on, a retry of `a` — with a timestamp still inside the window — is a duplicate,
  // whether or not the purge ran.
  app.clock.set(new Date(start.getTime() + 35 * DAY));
  assert.equal(await due(), false);
  await worker.runOnce();
  assert.deepEqual(await keysOf(app), ['a', 'b', 'c', 'clocked']);
  assert.equal(await send(app, customer.id, 'a', new Date(start.getTime() + 34 * DAY)), 'duplicate');

  // Past the window and the margin the keys go, at most `limit` per batch, oldest first.
  app.clock.set(new Date(start.getTime() + USAGE_KEY_RETENTION_MS + 1));
  assert.equal(await due(), true);
  assert.equal(await purgeExpiredUsageKeys(app.deps.db, app.clock.now(), 2), 2);
  assert.equal((await keysOf(app)).length, 2);
  await worker.runOnce();
  assert.deepEqual(await keysOf(app), ['clocked'], "the test clock customer's key stays");
  assert.equal(await due(), false);
  assert.equal(await purgeExpiredUsageKeys(app.deps.db, app.clock.now(), 2), 0);
});
