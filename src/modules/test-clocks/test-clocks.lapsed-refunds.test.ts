// A test clock's advance ends `ready` only with no refund in doubt (SPEC §10 "Refunds from the
// API", §11). A refund request commits its `pending` refund, under a lease, before it calls the
// provider; the lease ends in real time, because the call takes real time however far an
// advance moves the clock. While it is live the caller may still be waiting for the provider's
// answer, so the advance neither looks the refund up nor sends it (that could refund twice):
// it waits. Once it lapses (the caller died), the advance resolves the refund before `ready`,
// looking it up first. Real time is the app's manual clock; both databases.
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { type TestApp } from '../../../test/helpers/app.ts';
import { appWithFakeProviders, type FakeProviders } from '../../../test/helpers/provider-apps.ts';
import { paystackCharge, postPaystack } from '../../../test/helpers/provider-events.ts';
import { refundLeaseMs, resolveRefund } from '../../billing/refunds.ts';
import { transactionWithRetry } from '../../db/transaction.ts';
import { CLOCK_AWARE_JOBS } from '../../worker/jobs.ts';
import { Worker } from '../../worker/runner.ts';
import { advanceTestClocks } from '../../worker/test-clocks.jobs.ts';
import { startRefundRequest } from '../payments/payments.refund-requests.ts';
import { testClockTime } from './test-clocks.time.ts';

type App = TestApp & FakeProviders;

const START = '2025-06-01T00:00:00.000Z';

const failLog = { error: (object: object) => assert.fail(`worker job failed: ${String(Object.values(object)[0])}`) };

/**
 * A clock at START, its customer's paid Paystack payment, and a refund request that committed
 * its `pending` refund of 1,000 at START and has not called Paystack yet (it is about to, or
 * it died): what a request leaves in the database before its provider call.
 */
async function refundInFlight(t: TestContext) {
  const app: App = await appWithFakeProviders(t, { TEST_CLOCKS: 'true' });
  const clock = (await app.request('POST', '/api/test-clocks', { body: { frozen_time: START } })).body;
  const customer = await app.request('POST', '/api/customers', {
    body: { email: 'refunded@example.com', test_clock: clock.id },
  });
  assert.equal(customer.status, 201, customer.text);
  const charge = paystackCharge({ amount: 5000, metadata: { customer_id: customer.body.id } });
  assert.equal((await postPaystack(app, charge)).status, 200);
  app.paystack.paid(charge.data.reference, 5000);
  const payment = await app.deps.db
    .selectFrom('payments')
    .selectAll()
    .where('provider_reference', '=', charge.data.reference)
    .executeTakeFirstOrThrow();
  assert.equal(payment.customer_id, customer.body.id);

  const atStart = testClockTime(clock.id, new Date(START), app.clock);
  const refund = await transactionWithRetry(app.deps.db, (trx) =>
    startRefundRequest(trx, atStart, payment, {
      amount: 1000,
      reason: null,
      requestKey: null,
      leaseMs: refundLeaseMs(app.deps),
    }),
  );
  const lease = refundLeaseMs(app.deps);
  assert.equal(refund.created_at, START, "stamped with the clock's time");
  assert.equal(refund.claimed_until, new Date(app.clock.now().getTime() + lease).toISOString(), 'leased in real time');
  assert.equal(refund.resume_at, new Date(Date.parse(START) + lease).toISOString(), "due in the clock's time");
  const call = { refund, provider: 'paystack' as const, paymentReference: payment.provider_reference, resumed: false };
  return { app, clockId: clock.id as string, refund, call: { ...call, clock: atStart } };
}

type InFlight = Awaited<ReturnType<typeof refundInFlight>>;

async function advanceTo(s: InFlight, frozenTime: string) {
  const advance = await s.app.request('POST', `/api/test-clocks/${s.clockId}/advance`, {
    body: { frozen_time: frozenTime },
  });
  assert.equal(advance.status, 202, advance.text);
}

async function runWorker(app: App) {
  await new Worker(app.deps, [advanceTestClocks(CLOCK_AWARE_JOBS)], failLog).runOnce();
}

async function clockRow(s: InFlight) {
  return s.app.deps.db.selectFrom('test_clocks').selectAll().where('id', '=', s.clockId).executeTakeFirstOrThrow();
}

async function refundRow(s: InFlight) {
  return s.app.deps.db.selectFrom('refunds').selectAll().where('id', '=', s.refund.id).executeTakeFirstOrThrow();
}

const refundTraffic = (app: App) => app.paystack.calls.filter((call) => call.path.startsWith('/refund'));

test("an advance past a refund's resume time waits while its caller's lease is live in real time: nothing looked up or sent twice", async (t) => {
  const s = await refundInFlight(t);
  await advanceTo(s, '2025-06-01T01:00:00.000Z');

  await runWorker(s.app);
  assert.equal((await clockRow(s)).status, 'advancing', 'the caller may still be waiting for Paystack');
  assert.deepEqual(refundTraffic(s.app), [], 'the advance neither looked the refund up nor sent it');
  assert.equal(
    new Date((await clockRow(s)).lease_expires_at!).toISOString(),
    s.refund.claimed_until,
    "the advance is taken again when the refund's lease ends",
  );

  // The caller was alive: its call reaches Paystack and the answer is recorded.
  await resolveRefund(s.app.deps, s.call);
  s.app.clock.advance(refundLeaseMs(s.app.deps));
  await runWorker(s.app);
  assert.equal((await clockRow(s)).status, 'ready');
  assert.equal(s.app.paystack.ledger.refundsWithMarker(s.refund.id).length, 1, 'one refund at Paystack');
  assert.equal(s.app.paystack.refundCalls.length, 1);
  const row = await refundRow(s);
  assert.equal(row.provider_refund_id, s.app.paystack.ledger.refundsWithMarker(s.refund.id)[0]!.providerId);
});

test("an advance past a refund's resume time after its caller died (lease lapsed in real time) looks it up, sends it once, at its due instant", async (t) => {
  const s = await refundInFlight(t);
  await advanceTo(s, '2025-06-01T01:00:00.000Z');
  s.app.clock.advance(refundLeaseMs(s.app.deps));

  await runWorker(s.app);
  assert.equal((await clockRow(s)).status, 'ready');
  assert.equal(s.app.paystack.ledger.refundsWithMarker(s.refund.id).length, 1, 'absence proven, sent once');
  assert.ok(
    refundTraffic(s.app).some((call) => call.method === 'GET'),
    'looked up before it was sent',
  );
  const row = await refundRow(s);
  assert.ok(row.provider_refund_id !== null);
  assert.equal(row.updated_at, s.refund.resume_at, "resolved at its resume time, in the clock's time");
});

test('an advance whose target comes before the refund is due still ends with it resolved: waited for while live, then resumed at its last step', async (t) => {
  const s = await refundInFlight(t);
  const target = '2025-06-01T00:00:10.000Z';
  assert.ok(target < s.refund.resume_at!, 'the target comes before the refund is due on the clock');
  await advanceTo(s, target);

  await runWorker(s.app);
  assert.equal((await clockRow(s)).status, 'advancing', 'never ready with a refund in doubt');
  assert.deepEqual(refundTraffic(s.app), []);

  s.app.clock.advance(refundLeaseMs(s.app.deps) / 2);
  await runWorker(s.app);
  assert.equal((await clockRow(s)).status, 'advancing', 'the lease is still live');
  s.app.clock.advance(refundLeaseMs(s.app.deps) / 2);
  await runWorker(s.app);
  assert.equal((await clockRow(s)).status, 'ready');
  assert.equal(s.app.paystack.ledger.refundsWithMarker(s.refund.id).length, 1, 'sent once');
  const row = await refundRow(s);
  assert.ok(row.provider_refund_id !== null);
  assert.equal(row.updated_at, START, "resolved at the advance's last step (its start: nothing else was due)");
  assert.equal((await clockRow(s)).reached_time, target);
});

test('the real-time worker never takes a clock refund, lease lapsed or not', async (t) => {
  const s = await refundInFlight(t);
  s.app.clock.advance(refundLeaseMs(s.app.deps) * 10);
  await new Worker(s.app.deps, CLOCK_AWARE_JOBS, failLog).runOnce();
  assert.deepEqual(refundTraffic(s.app), []);
  assert.equal((await refundRow(s)).provider_refund_id, null);
});
