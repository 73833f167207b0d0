// One bad row does not block its batch (SPEC §7 "Failing rows"): a renewal that throws is
// rolled back alone, recorded and retried after a backoff; the rest of the batch renews, and
// nothing is renewed or invoiced twice.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import { createCustomer, createSubscription } from '../../test/helpers/factories.ts';
import { testClockTime } from '../modules/test-clocks/test-clocks.time.ts';
import { applySuccessfulPayment } from '../billing/subscription-payments.ts';
import { ROW_RETRY_BASE_MS } from '../db/row-failures.ts';
import { issueRenewalInvoices } from './subscriptions.jobs.ts';

const SECOND = 1_000;
const MAX_PLAN_AMOUNT = 1_000_000_000_000;

async function activeSubscription(app: TestApp, plan?: Record<string, unknown>) {
  const sub = await createSubscription(app, plan ? { plan } : {});
  await app.deps.db.transaction().execute((trx) => applySuccessfulPayment(trx, app.deps, sub.id));
  return sub;
}

async function periodStart(app: TestApp, id: string): Promise<string | null> {
  const row = await app.deps.db
    .selectFrom('subscriptions')
    .select('current_period_start')
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
  return row.current_period_start;
}

async function invoiceCount(app: TestApp, id: string): Promise<number> {
  const rows = await app.deps.db.selectFrom('invoices').select('id').where('subscription_id', '=', id).execute();
  return rows.length;
}

async function failures(app: TestApp) {
  return app.deps.db.selectFrom('worker_row_failures').selectAll().execute();
}

/** `billing_worker_row_failures{job="issue_renewal_invoices"}` as /metrics renders it (undefined: no series). */
async function failingRenewalsGauge(app: TestApp): Promise<number | undefined> {
  const { body } = await app.app.metrics.render();
  const line = body
    .split('\n')
    .find((text) => text.startsWith('billing_worker_row_failures{job="issue_renewal_invoices"}'));
  return line === undefined ? undefined : Number(line.split(' ').at(-1));
}

test('a renewal that throws is rolled back alone: the others renew, it is retried after a backoff and renews once fixed', async (t) => {
  const app = await buildTestApp(t);
  const first = await activeSubscription(app);
  app.clock.advance(SECOND);
  // The largest amount a plan may have: × 10,000 units is beyond Number.MAX_SAFE_INTEGER.
  const bad = await activeSubscription(app, { amount: MAX_PLAN_AMOUNT });
  app.clock.advance(SECOND);
  const last = await activeSubscription(app);
  await app.deps.db.updateTable('subscriptions').set({ quantity: 10_000 }).where('id', '=', bad.id).execute();
  const periodBefore = await periodStart(app, bad.id);
  const logged: Record<string, unknown>[] = [];
  const log = { error: (object: object) => void logged.push(object as Record<string, unknown>) };

  app.clock.set(new Date(Date.parse(last.current_period_end) + SECOND));
  assert.equal(await issueRenewalInvoices.run(app.deps, undefined, log), 3, 'one batch claims all three');
  for (const sub of [first, last]) {
    assert.equal(await periodStart(app, sub.id), sub.current_period_end, `${sub.id} renewed`);
    assert.equal(await invoiceCount(app, sub.id), 2);
  }
  assert.equal(await periodStart(app, bad.id), periodBefore, 'the failing one did not move');
  assert.equal(await invoiceCount(app, bad.id), 1, 'and has no renewal invoice');
  const [failure, ...others] = await failures(app);
  assert.equal(others.length, 0);
  assert.equal(failure?.job, 'issue_renewal_invoices');
  assert.equal(failure?.row_id, bad.id);
  assert.equal(failure?.attempts, 1);
  assert.match(failure?.error ?? '', /AmountOutOfRange/);
  assert.equal(new Date(failure!.retry_at).getTime(), app.clock.now().getTime() + ROW_RETRY_BASE_MS);
  assert.equal(logged.length, 1);
  assert.equal(logged[0]?.rowId, bad.id);
  assert.equal(logged[0]?.job, 'issue_renewal_invoices');
  assert.equal(await failingRenewalsGauge(app), 1);
  // Its events were rolled back with it: one subscription.updated per renewed subscription.
  const events = await app.deps.db
    .selectFrom('events')
    .select('data')
    .where('topic', '=', 'subscription.updated')
    .where('created_at', '>=', app.clock.now().toISOString())
    .execute();
  const renewedIds = events.map((event) => JSON.parse(event.data).id as string);
  assert.deepEqual(renewedIds.sort(), [first.id, last.id].sort());

  // Not claimed again before its retry time: the next runs find nothing.
  assert.equal(await issueRenewalInvoices.run(app.deps, undefined, log), 0);
  app.clock.advance(ROW_RETRY_BASE_MS - 1);
  assert.equal(await issueRenewalInvoices.run(app.deps, undefined, log), 0);
  // At its retry it fails again: the wait doubles.
  app.clock.advance(1);
  assert.equal(await issueRenewalInvoices.run(app.deps, undefined, log), 1);
  const [second] = await failures(app);
  assert.equal(second?.attempts, 2);
  assert.equal(second?.first_failed_at, failure?.first_failed_at);
  assert.equal(new Date(second!.retry_at).getTime(), app.clock.now().getTime() + 2 * ROW_RETRY_BASE_MS);
  assert.equal(logged.length, 2);

  // Fixed: at its next retry it renews, once, and its failure record is gone.
  await app.deps.db.updateTable('subscriptions').set({ quantity: 1 }).where('id', '=', bad.id).execute();
  app.clock.advance(2 * ROW_RETRY_BASE_MS);
  assert.equal(await issueRenewalInvoices.run(app.deps, undefined, log), 1);
  assert.equal(await periodStart(app, bad.id), bad.current_period_end);
  assert.equal(await invoiceCount(app, bad.id), 2);
  assert.deepEqual(await failures(app), []);
  assert.equal(await failingRenewalsGauge(app), undefined);
  assert.equal(await issueRenewalInvoices.run(app.deps, undefined, log), 0);
  for (const sub of [first, bad, last]) assert.equal(await invoiceCount(app, sub.id), 2, 'nothing invoiced twice');
  assert.equal(logged.length, 2);
});

test("a test clock's advance retries its failed renewal at the retry time, in the clock's time", async (t) => {
  const app = await buildTestApp(t, { env: { TEST_CLOCKS: 'true' } });
  const clock = await app.request('POST', '/api/test-clocks', { body: { frozen_time: '2026-01-01T00:00:00.000Z' } });
  assert.equal(clock.status, 201, clock.text);
  const customer = await createCustomer(app, { test_clock: clock.body.id });
  const sub = await createSubscription(app, { customerId: customer.id, plan: { amount: MAX_PLAN_AMOUNT } });
  await app.deps.db.transaction().execute((trx) => applySuccessfulPayment(trx, app.deps, sub.id));
  await app.deps.db.updateTable('subscriptions').set({ quantity: 10_000 }).where('id', '=', sub.id).execute();
  const periodEnd = Date.parse(sub.current_period_end);
  const nextDue = issueRenewalInvoices.nextDueAt!;
  const scope = { testClockId: clock.body.id as string };
  assert.equal((await nextDue(app.deps, scope, new Date(periodEnd - 1)))?.getTime(), periodEnd);
  // A failure recorded at the clock's period end names its retry as the job's next due time.
  const clockDeps = { ...app.deps, clock: testClockTime(scope.testClockId, new Date(periodEnd), app.deps.clock) };
  assert.equal(await issueRenewalInvoices.run(clockDeps, scope), 1);
  const [failure] = await failures(app);
  assert.equal(failure?.test_clock_id, clock.body.id);
  assert.equal((await nextDue(app.deps, scope, new Date(periodEnd)))?.getTime(), periodEnd + ROW_RETRY_BASE_MS);
  // Real time neither claims it nor steps to it.
  assert.equal(await issueRenewalInvoices.run(app.deps), 0);
});
