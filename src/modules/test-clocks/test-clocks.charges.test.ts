// Automatic charges under test clocks (SPEC §10, §11): the charge job is clock-aware — the
// real-time worker never charges a clock customer's invoice, and an advance charges only its
// own clock's invoices, at the clock's time, against the configured provider API.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';
import { createPlan } from '../../../test/helpers/factories.ts';
import { FakePaystack } from '../../../test/helpers/fake-paystack.ts';
import { saveTestPaymentMethod } from '../../../test/helpers/payment-methods.ts';
import { PAYSTACK_SECRET } from '../../../test/helpers/provider-events.ts';
import { encryptSecret } from '../../shared/encryption.ts';
import { CLOCK_AWARE_JOBS } from '../../worker/jobs.ts';
import { Worker } from '../../worker/runner.ts';
import { requestInvoiceCharge } from '../../billing/charges.ts';
import { chargeInvoices } from '../../worker/charges.jobs.ts';
import { lockInvoice } from '../invoices/invoices.lifecycle.ts';
import { advanceTestClocks } from '../../worker/test-clocks.jobs.ts';

const failLog = { error: (object: object) => assert.fail(`worker job failed: ${String(Object.values(object)[0])}`) };

/** A customer (on `clockId`, or real) with a subscription whose first invoice is open, and a saved Paystack card. */
async function customerWithOpenInvoice(app: TestApp, planId: string, clockId?: string) {
  const customer = await app.request('POST', '/api/customers', {
    body: { email: `c${Math.random()}@example.com`, ...(clockId ? { test_clock: clockId } : {}) },
  });
  assert.equal(customer.status, 201, customer.text);
  const sub = await app.request('POST', '/api/subscriptions', {
    body: { customer_id: customer.body.id, plan_id: planId },
  });
  assert.equal(sub.status, 201, sub.text);
  const invoice = (await app.request('GET', `/api/invoices?subscription_id=${sub.body.id}`)).body.data[0];
  await saveTestPaymentMethod(app, customer.body.id, 'paystack');
  return { customerId: customer.body.id as string, invoiceId: invoice.id as string };
}

function chargeAt(app: TestApp, invoiceId: string, at: string) {
  return app.deps.db.transaction().execute(async (trx) => {
    await requestInvoiceCharge(trx, app.deps, await lockInvoice(trx, invoiceId), at);
  });
}

test("the charge job is clock-aware: real time never charges a clock's invoice, an advance charges only its own", async (t) => {
  const paystack = await FakePaystack.start(t);
  const app = await buildTestApp(t, {
    env: { TEST_CLOCKS: 'true', PAYSTACK_SECRET_KEY: PAYSTACK_SECRET, PAYSTACK_API_URL: paystack.url },
  });
  const plan = await createPlan(app, { currency: 'NGN', amount: 5000 });
  const clock = (await app.request('POST', '/api/test-clocks', { body: { frozen_time: '2026-01-01T00:00:00.000Z' } }))
    .body;
  const onClock = await customerWithOpenInvoice(app, plan.id, clock.id);
  const real = await customerWithOpenInvoice(app, plan.id);
  // Real time is 2026-01-15: the clock's invoice is due by its time (and earlier than real
  // time); the real one falls due on 2026-01-20, inside the time the clock will reach.
  await chargeAt(app, onClock.invoiceId, '2026-01-01T00:00:00.000Z');
  await chargeAt(app, real.invoiceId, '2026-01-20T00:00:00.000Z');

  await chargeInvoices.run(app.deps);
  assert.equal(paystack.chargeCalls.length, 0, 'the real-time worker leaves the clock invoice alone');

  const advance = await app.request('POST', `/api/test-clocks/${clock.id}/advance`, {
    body: { frozen_time: '2026-02-01T00:00:00.000Z' },
  });
  assert.equal(advance.status, 202, advance.text);
  await new Worker(app.deps, [advanceTestClocks(CLOCK_AWARE_JOBS)], failLog).runOnce();
  assert.equal((await app.request('GET', `/api/test-clocks/${clock.id}`)).body.status, 'ready');
  const charged = () => paystack.chargeCalls.map((call) => (call.body.metadata as Record<string, string>).invoice_id);
  const clockInvoices = (await app.request('GET', `/api/invoices?customer_id=${onClock.customerId}&sort_order=asc`))
    .body.data;
  assert.equal(clockInvoices.length, 2, 'the first invoice, and the renewal of 2026-02-01');
  assert.deepEqual(
    charged(),
    clockInvoices.map((invoice: { id: string }) => invoice.id),
    "the advance charged its own customer's invoices (the renewal too), not the real one due inside its time",
  );
  const clockInvoice = (await app.request('GET', `/api/invoices/${onClock.invoiceId}`)).body;
  assert.equal(clockInvoice.status, 'paid');
  assert.equal(clockInvoice.payment_attempts.length, 1);
  assert.equal(clockInvoice.payment_attempts[0].created_at, '2026-01-01T00:00:00.000Z', "at the clock's time");

  app.clock.set(new Date('2026-01-20T00:00:00.000Z'));
  await chargeInvoices.run(app.deps);
  assert.deepEqual(charged().slice(2), [real.invoiceId]);
  assert.equal((await app.request('GET', `/api/invoices/${real.invoiceId}`)).body.status, 'paid');
});

test('a clock day with the provider unreachable asks it a bounded number of times, backing off in clock time', async (t) => {
  const paystack = await FakePaystack.start(t);
  const app = await buildTestApp(t, {
    env: { TEST_CLOCKS: 'true', PAYSTACK_SECRET_KEY: PAYSTACK_SECRET, PAYSTACK_API_URL: paystack.url },
  });
  const plan = await createPlan(app, { currency: 'NGN', amount: 5000 });
  const clock = (await app.request('POST', '/api/test-clocks', { body: { frozen_time: '2026-01-01T00:00:00.000Z' } }))
    .body;
  const { invoiceId } = await customerWithOpenInvoice(app, plan.id, clock.id);
  await chargeAt(app, invoiceId, '2026-01-01T00:00:00.000Z');
  // Paystack answers nothing usable to anything (a clock minute per call would be 1,440).
  paystack.queue(...Array.from({ length: 3000 }, () => ({ status: 503, body: { status: false, message: 'down' } })));

  const advance = await app.request('POST', `/api/test-clocks/${clock.id}/advance`, {
    body: { frozen_time: '2026-01-02T00:00:00.000Z' },
  });
  assert.equal(advance.status, 202, advance.text);
  await new Worker(app.deps, [advanceTestClocks(CLOCK_AWARE_JOBS)], failLog).runOnce();
  assert.equal((await app.request('GET', `/api/test-clocks/${clock.id}`)).body.status, 'ready');
  // The charge, then asks 1, 2, 4 … 64 minutes after it, then hourly: 31 calls within the day.
  const calls = paystack.calls.length;
  assert.ok(calls >= 10 && calls <= 31, `${calls} calls in one clock day`);
  const attempts = (await app.request('GET', `/api/invoices/${invoiceId}`)).body.payment_attempts;
  assert.deepEqual(
    attempts.map((attempt: { status: string }) => attempt.status),
    ['unknown'],
    'one attempt, asked about: never charged twice',
  );
  const asks = paystack.calls.slice(1).map((call) => call.path);
  assert.ok(
    asks.every((path) => path.startsWith('/transaction/verify/')),
    'every later call asks about the same reference',
  );
});

test('an advance completes when one customer of the clock has a saved method no configured key decrypts', async (t) => {
  const paystack = await FakePaystack.start(t);
  const app = await buildTestApp(t, {
    env: { TEST_CLOCKS: 'true', PAYSTACK_SECRET_KEY: PAYSTACK_SECRET, PAYSTACK_API_URL: paystack.url },
  });
  const plan = await createPlan(app, { currency: 'NGN', amount: 5000 });
  const clock = (await app.request('POST', '/api/test-clocks', { body: { frozen_time: '2026-01-01T00:00:00.000Z' } }))
    .body;
  const customers = [];
  for (let i = 0; i < 3; i++) customers.push(await customerWithOpenInvoice(app, plan.id, clock.id));
  const unreadable = customers[1]!;
  // Saved under a key that is no longer configured (DATA_ENCRYPTION_KEY changed since).
  await app.deps.db
    .updateTable('payment_methods')
    .set({ credential: encryptSecret(randomBytes(32), 'AUTH_saved_under_a_lost_key') })
    .where('customer_id', '=', unreadable.customerId)
    .execute();
  for (const customer of customers) await chargeAt(app, customer.invoiceId, '2026-01-01T00:00:00.000Z');

  const advance = await app.request('POST', `/api/test-clocks/${clock.id}/advance`, {
    body: { frozen_time: '2026-01-01T12:00:00.000Z' },
  });
  assert.equal(advance.status, 202, advance.text);
  await new Worker(app.deps, [advanceTestClocks(CLOCK_AWARE_JOBS)], failLog).runOnce();
  assert.equal((await app.request('GET', `/api/test-clocks/${clock.id}`)).body.status, 'ready');

  for (const customer of customers) {
    const invoice = (await app.request('GET', `/api/invoices/${customer.invoiceId}`)).body;
    if (customer === unreadable) {
      assert.equal(invoice.status, 'open');
      assert.deepEqual(
        invoice.payment_attempts.map((a: { status: string; failure_code: string }) => [a.status, a.failure_code]),
        [['failed', 'payment_method_unreadable']],
      );
    } else {
      assert.equal(invoice.status, 'paid');
    }
  }
  assert.equal(paystack.chargeCalls.length, 2, 'the two readable methods were charged');
});
