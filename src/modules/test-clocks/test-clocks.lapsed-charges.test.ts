// A test clock's advance ends `ready` only with no charge in doubt (SPEC §11): a worker that
// died mid-advance, after claiming a charge at the target instant, leaves its attempt `pending`
// and its invoice due one lease past the target in the clock's time. The advance that resumes
// asks the provider about it once its lease has lapsed in real time (never charging again
// blindly), and waits while the lease is live. Real time is the app's manual clock; both DBs.
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';
import { createPlan } from '../../../test/helpers/factories.ts';
import { FakePaystack } from '../../../test/helpers/fake-paystack.ts';
import { saveTestPaymentMethod } from '../../../test/helpers/payment-methods.ts';
import { PAYSTACK_SECRET } from '../../../test/helpers/provider-events.ts';
import { callProviderForCharge, chargeLeaseMs, claimCharges, requestInvoiceCharge } from '../../billing/charges.ts';
import { CLOCK_AWARE_JOBS } from '../../worker/jobs.ts';
import { Worker } from '../../worker/runner.ts';
import { advanceTestClocks } from '../../worker/test-clocks.jobs.ts';
import { lockInvoice } from '../invoices/invoices.lifecycle.ts';
import { listInvoiceAttempts } from '../payment-attempts/payment-attempts.ts';
import { testClockTime } from './test-clocks.time.ts';

const START = '2026-01-01T00:00:00.000Z';
/** The advance's target, and the instant the invoice falls due for a charge. */
const TARGET = '2026-01-01T01:00:00.000Z';

const failLog = { error: (object: object) => assert.fail(`worker job failed: ${String(Object.values(object)[0])}`) };

/**
 * A clock advancing to TARGET, its customer's invoice due for a charge then, and a worker that
 * took the advance to TARGET, claimed the charge, sent it to Paystack (`sent`) or not, and
 * died: its advance lease lapsed already (as kill-run lapses it), its charge lease not.
 */
async function deadWorkerAtTarget(t: TestContext, sent: boolean) {
  const paystack = await FakePaystack.start(t);
  const app = await buildTestApp(t, {
    env: { TEST_CLOCKS: 'true', PAYSTACK_SECRET_KEY: PAYSTACK_SECRET, PAYSTACK_API_URL: paystack.url },
  });
  const plan = await createPlan(app, { currency: 'NGN', amount: 5000 });
  const clock = (await app.request('POST', '/api/test-clocks', { body: { frozen_time: START } })).body;
  const customer = await app.request('POST', '/api/customers', {
    body: { email: 'renew@example.com', test_clock: clock.id },
  });
  const sub = await app.request('POST', '/api/subscriptions', {
    body: { customer_id: customer.body.id, plan_id: plan.id },
  });
  const invoiceId: string = (await app.request('GET', `/api/invoices?subscription_id=${sub.body.id}`)).body.data[0].id;
  await saveTestPaymentMethod(app, customer.body.id, 'paystack');
  await app.deps.db.transaction().execute(async (trx) => {
    await requestInvoiceCharge(trx, app.deps, await lockInvoice(trx, invoiceId), TARGET);
  });
  const advance = await app.request('POST', `/api/test-clocks/${clock.id}/advance`, { body: { frozen_time: TARGET } });
  assert.equal(advance.status, 202, advance.text);

  // The dead worker's step: saved at TARGET, its charge claimed there and (maybe) sent.
  await app.deps.db.updateTable('test_clocks').set({ reached_time: TARGET }).where('id', '=', clock.id).execute();
  const atTarget = { ...app.deps, clock: testClockTime(clock.id, new Date(TARGET), app.clock) };
  const { claimed } = await claimCharges(atTarget, 'worker-that-dies', 10, { testClockId: clock.id });
  assert.equal(claimed.length, 1);
  if (sent) assert.equal((await callProviderForCharge(atTarget, claimed[0]!)).kind, 'succeeded');
  const invoice = await app.deps.db
    .selectFrom('invoices')
    .select('next_payment_attempt_at')
    .where('id', '=', invoiceId)
    .executeTakeFirstOrThrow();
  assert.ok(invoice.next_payment_attempt_at! > TARGET, "due again one lease past the target, in the clock's time");
  return { app, paystack, clockId: clock.id as string, invoiceId, reference: claimed[0]!.attempt.reference };
}

type Dead = Awaited<ReturnType<typeof deadWorkerAtTarget>>;

async function runWorker(app: TestApp) {
  await new Worker(app.deps, [advanceTestClocks(CLOCK_AWARE_JOBS)], failLog).runOnce();
}

async function clockStatus(s: Dead): Promise<string> {
  return (await s.app.request('GET', `/api/test-clocks/${s.clockId}`)).body.status;
}

/** The invoice paid, by its one attempt, charged once at Paystack, after asking about it. */
async function assertResolvedOnce(s: Dead) {
  const invoice = (await s.app.request('GET', `/api/invoices/${s.invoiceId}`)).body;
  assert.equal(invoice.status, 'paid');
  assert.deepEqual(
    invoice.payment_attempts.map((a: { status: string; reference: string }) => [a.status, a.reference]),
    [['succeeded', s.reference]],
  );
  assert.equal(s.paystack.chargeCount(s.reference), 1, 'charged once');
  assert.equal(s.paystack.totalCharges, 1);
  assert.ok(
    s.paystack.calls.some((call) => call.path === `/transaction/verify/${s.reference}`),
    'the resumed advance asked Paystack first',
  );
}

for (const sent of [true, false]) {
  test(`an advance that finds a dead worker's charge lease lapsed in real time (${sent ? 'charge sent' : 'charge never sent'}) asks the provider and ends ready with the invoice paid once`, async (t) => {
    const s = await deadWorkerAtTarget(t, sent);
    s.app.clock.advance(chargeLeaseMs(s.app.deps.config));

    await runWorker(s.app);
    assert.equal(await clockStatus(s), 'ready');
    await assertResolvedOnce(s);
    const attempted = (await s.app.request('GET', '/api/events?topic=invoice.payment_attempted')).body.data;
    assert.equal(attempted.length, 1);
    assert.equal(attempted[0].created_at, TARGET, "resolved at the target instant, in the clock's time");
  });
}

test('an advance waits while a charge lease of its clock is live in real time, then resolves it', async (t) => {
  const s = await deadWorkerAtTarget(t, true);
  const [attempt] = await listInvoiceAttempts(s.app.deps.db, s.invoiceId);
  assert.equal(
    attempt!.locked_until,
    new Date(s.app.clock.now().getTime() + chargeLeaseMs(s.app.deps.config)).toISOString(),
    'the lease is in real time',
  );

  await runWorker(s.app);
  assert.equal(await clockStatus(s), 'advancing', 'the lease may still be a worker calling Paystack');
  assert.equal(s.paystack.calls.length, 1, 'nothing asked or sent meanwhile');
  const row = await s.app.deps.db
    .selectFrom('test_clocks')
    .select('lease_expires_at')
    .where('id', '=', s.clockId)
    .executeTakeFirstOrThrow();
  assert.equal(new Date(row.lease_expires_at!).toISOString(), attempt!.locked_until, 'the advance is taken again then');

  s.app.clock.advance(chargeLeaseMs(s.app.deps.config) / 2);
  await runWorker(s.app);
  assert.equal(await clockStatus(s), 'advancing');
  s.app.clock.advance(chargeLeaseMs(s.app.deps.config) / 2);
  await runWorker(s.app);
  assert.equal(await clockStatus(s), 'ready');
  await assertResolvedOnce(s);
});
