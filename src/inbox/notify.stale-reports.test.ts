// SPEC §5 stale reports: a subscription's status follows the latest payment report by
// provider time, whatever order the reports arrive in; every successful payment is applied to
// invoices (a period paid in advance when nothing is owed), and no payment moves a period.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import { createSubscription } from '../../test/helpers/factories.ts';
import { issueRenewalInvoices, markUnpaidRenewalsPastDue } from '../worker/subscriptions.jobs.ts';
import {
  nextSeq,
  PROVIDER_ENV,
  paystackCharge,
  paystackInvoiceFailed,
  postPaystack,
} from '../../test/helpers/provider-events.ts';

const RENEWAL_DUE = new Date('2026-02-15T10:00:30.000Z');

/**
 * A subscription paid for its first month through Paystack (so its subscription code is
 * known), at its renewal: the first period has just ended.
 */
async function renewingSubscription(t: TestContext) {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const subscription = await createSubscription(app);
  const code = `SUB_${nextSeq()}`;
  const first = paystackCharge({
    amount: 5000,
    subscriptionCode: code,
    metadata: { subscription_id: subscription.id },
  });
  first.data.paid_at = '2026-01-15T10:00:00.000Z';
  assert.equal((await postPaystack(app, first)).status, 200);
  app.clock.set(RENEWAL_DUE);
  return { app, subscription, code };
}

/** The renewal's successful charge, paid at `paidAt` (provider time). */
function renewalCharge(code: string, paidAt: string) {
  const charge = paystackCharge({ amount: 5000, subscriptionCode: code });
  charge.data.paid_at = paidAt;
  return charge;
}

/** A failed renewal attempt (its own transaction), reported at `createdAt` (provider time). */
function renewalFailure(code: string, createdAt: string) {
  const failure = paystackInvoiceFailed({
    subscriptionCode: code,
    amount: 5000,
    transaction: {
      reference: `T${nextSeq()}`,
      status: 'failed',
      amount: 5000,
      currency: 'NGN',
      gateway_response: 'Insufficient Funds',
    },
  });
  failure.data.created_at = createdAt;
  return failure;
}

async function outcome(app: TestApp, subscriptionId: string) {
  const subscription = (await app.request('GET', `/api/subscriptions/${subscriptionId}`)).body;
  const payments = (await app.request('GET', '/api/payments?limit=100')).body.data as { status: string }[];
  const rows = await app.deps.db.selectFrom('provider_events').select('status').execute();
  const paid = await app.deps.db
    .selectFrom('invoices')
    .select('period_start')
    .where('subscription_id', '=', subscriptionId)
    .where('status', '=', 'paid')
    .orderBy('period_start')
    .execute();
  return {
    status: subscription.status,
    paidPeriods: paid.map((invoice) => invoice.period_start),
    current_period_start: subscription.current_period_start,
    current_period_end: subscription.current_period_end,
    openCases: (await app.request('GET', '/api/dunning/cases?status=open')).body.total,
    succeededPayments: payments.filter((p) => p.status === 'succeeded').length,
    failedPayments: payments.filter((p) => p.status === 'failed').length,
    inbox: rows.map((r) => r.status),
  };
}

test('a failure report older than the last successful payment changes no subscription state; the failed attempt is recorded', async (t) => {
  const { app, subscription, code } = await renewingSubscription(t);
  await postPaystack(app, renewalCharge(code, '2026-02-15T10:00:20.000Z'));
  const paid = (await app.request('GET', `/api/subscriptions/${subscription.id}`)).body;
  assert.equal(paid.status, 'active');

  // The declined first attempt (10:00:10) is delivered after the retry that succeeded (10:00:20).
  assert.equal((await postPaystack(app, renewalFailure(code, '2026-02-15T10:00:10.000Z'))).status, 200);
  assert.deepEqual((await app.request('GET', `/api/subscriptions/${subscription.id}`)).body, paid);
  assert.equal((await app.request('GET', '/api/dunning/cases?status=open')).body.total, 0);
  const failed = (await app.request('GET', '/api/payments?status=failed')).body.data;
  assert.equal(failed.length, 1);
  assert.equal(failed[0].subscription_id, subscription.id);
  assert.equal(failed[0].failure_reason, 'Insufficient Funds');
  const pastDue = await app.request('GET', '/api/events?topic=subscription.past_due');
  assert.equal(pastDue.body.data.length, 0);
});

test('a failure then a later success end the same in either arrival order: active, the next period paid, no open case', async (t) => {
  const ends = [];
  for (const failureFirst of [true, false]) {
    const { app, subscription, code } = await renewingSubscription(t);
    const reports = [renewalFailure(code, '2026-02-15T10:00:10.000Z'), renewalCharge(code, '2026-02-15T10:00:20.000Z')];
    if (!failureFirst) reports.reverse();
    for (const report of reports) assert.equal((await postPaystack(app, report)).status, 200);
    ends.push(await outcome(app, subscription.id));
  }
  assert.deepEqual(ends[0], {
    status: 'active',
    // No worker ran: the period is still the first; the payment paid the next one (on the anchor).
    current_period_start: '2026-01-15T10:00:00.000Z',
    current_period_end: '2026-02-15T10:00:00.000Z',
    paidPeriods: ['2026-01-15T10:00:00.000Z', '2026-02-15T10:00:00.000Z'],
    openCases: 0,
    succeededPayments: 2,
    failedPayments: 1,
    inbox: ['processed', 'processed', 'processed'],
  });
  assert.deepEqual(ends[1], ends[0]);
});

test('a success older than a failure already applied pays its invoice but leaves the subscription past_due, in either arrival order', async (t) => {
  const ends = [];
  for (const successFirst of [true, false]) {
    const { app, subscription, code } = await renewingSubscription(t);
    // Paid at 10:00:10 for the new month, then the next charge (a top-up, say) failed at 10:00:20.
    const reports = [renewalCharge(code, '2026-02-15T10:00:10.000Z'), renewalFailure(code, '2026-02-15T10:00:20.000Z')];
    if (!successFirst) reports.reverse();
    for (const report of reports) assert.equal((await postPaystack(app, report)).status, 200);
    ends.push(await outcome(app, subscription.id));
  }
  assert.deepEqual(ends[0], {
    status: 'past_due',
    current_period_start: '2026-01-15T10:00:00.000Z',
    current_period_end: '2026-02-15T10:00:00.000Z',
    paidPeriods: ['2026-01-15T10:00:00.000Z', '2026-02-15T10:00:00.000Z'],
    openCases: 1,
    succeededPayments: 2,
    failedPayments: 1,
    inbox: ['processed', 'processed', 'processed'],
  });
  assert.deepEqual(ends[1], ends[0]);
});

test('a failure reported at the same provider time as a success changes nothing: on a tie the success wins', async (t) => {
  const { app, subscription, code } = await renewingSubscription(t);
  await postPaystack(app, renewalCharge(code, '2026-02-15T10:00:10.000Z'));
  await postPaystack(app, renewalFailure(code, '2026-02-15T10:00:10.000Z'));
  const after = await outcome(app, subscription.id);
  assert.equal(after.status, 'active');
  assert.equal(after.openCases, 0);
  assert.equal(after.failedPayments, 1);
});

test('an older success delivered late is not held back by a failure a newer success already answered', async (t) => {
  // The latest report is a success (10:00:20), so the late one (10:00:05) moves the
  // subscription like any success: here out of a renewal that later went unpaid.
  const { app, subscription, code } = await renewingSubscription(t);
  await postPaystack(app, renewalFailure(code, '2026-02-15T10:00:10.000Z'));
  await postPaystack(app, renewalCharge(code, '2026-02-15T10:00:20.000Z'));
  app.clock.set(new Date('2026-03-15T12:00:00.000Z'));
  // The renewal into the period from 15 Feb (paid in advance), then the one from 15 Mar,
  // whose invoice is overdue (SPEC §9).
  assert.equal(await issueRenewalInvoices.run(app.deps), 1);
  assert.equal(await issueRenewalInvoices.run(app.deps), 1);
  assert.equal(await markUnpaidRenewalsPastDue.run(app.deps), 1);
  assert.equal((await outcome(app, subscription.id)).status, 'past_due');

  await postPaystack(app, renewalCharge(code, '2026-02-15T10:00:05.000Z'));
  const after = await outcome(app, subscription.id);
  assert.equal(after.status, 'active');
  assert.equal(after.current_period_end, '2026-04-15T10:00:00.000Z');
  assert.deepEqual(after.paidPeriods, [
    '2026-01-15T10:00:00.000Z',
    '2026-02-15T10:00:00.000Z',
    '2026-03-15T10:00:00.000Z',
  ]);
  assert.equal(after.openCases, 0);
  assert.equal(after.succeededPayments, 3);
});
