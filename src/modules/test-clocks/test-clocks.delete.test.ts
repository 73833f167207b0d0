// Deleting a test clock (SPEC §11 "Deleting") against money in motion: refused while one of
// its charges is in flight with the provider; a provider event that arrives afterwards for
// one of its customers never brings the customer back; and its invoices never took numbers
// from the real, gap-free sequence.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';
import { createPlan } from '../../../test/helpers/factories.ts';
import { FakePaystack } from '../../../test/helpers/fake-paystack.ts';
import { saveTestPaymentMethod } from '../../../test/helpers/payment-methods.ts';
import { PROVIDER_ENV } from '../../../test/helpers/provider-events.ts';
import {
  callProviderForCharge,
  claimCharges,
  recordChargeResult,
  requestInvoiceCharge,
} from '../../billing/charges.ts';
import { chargeInvoices } from '../../worker/charges.jobs.ts';
import { lockInvoice } from '../invoices/invoices.lifecycle.ts';

const T0 = '2026-01-01T00:00:00.000Z';

async function appWithPaystack(t: Parameters<typeof buildTestApp>[0]) {
  const paystack = await FakePaystack.start(t);
  const app = await buildTestApp(t, {
    env: { TEST_CLOCKS: 'true', ...PROVIDER_ENV, PAYSTACK_API_URL: paystack.url },
  });
  paystack.webhookTarget = { url: app.baseUrl };
  return { app, paystack };
}

async function createClock(app: TestApp) {
  const res = await app.request('POST', '/api/test-clocks', { body: { frozen_time: T0 } });
  assert.equal(res.status, 201, res.text);
  return res.body as { id: string };
}

/** A customer (on `clockId`, or real) with a subscription whose first invoice is open and due for a charge, and a saved Paystack card. */
async function customerWithChargeDue(app: TestApp, planId: string, email: string, clockId?: string) {
  const customer = await app.request('POST', '/api/customers', {
    body: { email, ...(clockId ? { test_clock: clockId } : {}) },
  });
  assert.equal(customer.status, 201, customer.text);
  const sub = await app.request('POST', '/api/subscriptions', {
    body: { customer_id: customer.body.id, plan_id: planId },
  });
  assert.equal(sub.status, 201, sub.text);
  const invoice = (await app.request('GET', `/api/invoices?subscription_id=${sub.body.id}`)).body.data[0];
  await saveTestPaymentMethod(app, customer.body.id, 'paystack');
  await app.deps.db.transaction().execute(async (trx) => {
    await requestInvoiceCharge(trx, app.deps, await lockInvoice(trx, invoice.id), T0);
  });
  return {
    customerId: customer.body.id as string,
    subscriptionId: sub.body.id as string,
    invoiceId: invoice.id as string,
    number: invoice.number as string,
  };
}

async function customerCount(app: TestApp): Promise<number> {
  return (await app.request('GET', '/api/customers')).body.meta.total;
}

test('DELETE of a clock whose charge is pending or unknown with the provider is 409 conflict and deletes nothing', async (t) => {
  const { app, paystack } = await appWithPaystack(t);
  const plan = await createPlan(app, { currency: 'NGN', amount: 5000 });
  const clock = await createClock(app);
  const { customerId, invoiceId } = await customerWithChargeDue(app, plan.id, 'inflight@example.com', clock.id);
  const scope = { testClockId: clock.id };

  // Claimed: the attempt is committed `pending` and the call is about to go out.
  const { claimed } = await claimCharges(app.deps, 'test-worker', 10, scope);
  assert.equal(claimed.length, 1);
  const pending = await app.request('DELETE', `/api/test-clocks/${clock.id}`);
  assert.equal(pending.status, 409, pending.text);
  assert.equal(pending.body.code, 'conflict');
  assert.match(pending.body.message, /charge\(s\) in flight with the provider/);
  assert.deepEqual(pending.body.details, {
    charges_in_flight: [{ attempt_id: claimed[0]!.attempt.id, invoice_id: invoiceId, status: 'pending' }],
  });
  assert.equal((await app.request('GET', `/api/test-clocks/${clock.id}`)).status, 200);
  assert.equal((await app.request('GET', `/api/customers/${customerId}`)).status, 200);

  // No usable answer: `unknown`, and the worker will ask again.
  paystack.queue({ status: 503, body: { status: false, message: 'Service unavailable' } });
  await recordChargeResult(app.deps, claimed[0]!, await callProviderForCharge(app.deps, claimed[0]!));
  const unknown = await app.request('DELETE', `/api/test-clocks/${clock.id}`);
  assert.equal(unknown.status, 409, unknown.text);
  assert.equal(unknown.body.details.charges_in_flight[0].status, 'unknown');
  assert.equal((await app.request('GET', `/api/invoices/${invoiceId}`)).status, 200);

  // Asked again once due (in the clock's scope): charged, recorded; now the clock may go.
  app.clock.set(new Date('2026-02-01T00:00:00.000Z'));
  await chargeInvoices.run(app.deps, scope);
  assert.equal((await app.request('GET', `/api/invoices/${invoiceId}`)).body.status, 'paid');
  assert.equal((await app.request('DELETE', `/api/test-clocks/${clock.id}`)).status, 204);
  const [payment] = (await app.request('GET', '/api/payments')).body.data;
  assert.equal(payment.status, 'succeeded');
  assert.equal(payment.customer_id, null, 'the payment stays, detached');
});

test('a provider event for a customer deleted with its clock records the payment unattributed and never re-creates the customer', async (t) => {
  const { app, paystack } = await appWithPaystack(t);
  const plan = await createPlan(app, { currency: 'NGN', amount: 5000 });
  const clock = await createClock(app);
  const email = 'gone@example.com';
  const { customerId } = await customerWithChargeDue(app, plan.id, email, clock.id);
  await chargeInvoices.run(app.deps, { testClockId: clock.id });
  const [charge] = paystack.chargeCalls;
  assert.ok(charge, 'charged');
  assert.equal((await app.request('DELETE', `/api/test-clocks/${clock.id}`)).status, 204);
  assert.equal(await customerCount(app), 0);

  // The provider's webhook for that charge arrives after the delete (metadata and email name the customer).
  assert.equal(await paystack.sendChargeWebhook(charge.body.reference as string), 200);
  assert.equal(await customerCount(app), 0, 'no customer made from the email');
  const [payment] = (await app.request('GET', '/api/payments')).body.data;
  assert.equal(payment.customer_id, null);
  const inbox = (await app.request('GET', '/api/provider-events')).body.data;
  assert.deepEqual(
    inbox.map((row: { status: string }) => row.status),
    ['processed'],
  );
  const created = (await app.request('GET', '/api/events?topic=customer.created')).body.data;
  assert.deepEqual(
    created.map((event: { data: { id: string } }) => event.data.id),
    [customerId],
    'only the clock customer, from before',
  );
});

test("clock invoices are numbered in their clock's own sequence: deleting a clock leaves no gap in the real numbers", async (t) => {
  const { app } = await appWithPaystack(t);
  const plan = await createPlan(app, { currency: 'NGN', amount: 5000 });
  const first = await customerWithChargeDue(app, plan.id, 'real1@example.com');
  const clock = await createClock(app);
  const onClock = await customerWithChargeDue(app, plan.id, 'clock1@example.com', clock.id);
  const second = await customerWithChargeDue(app, plan.id, 'clock2@example.com', clock.id);
  assert.equal(first.number, 'INV-000001');
  assert.equal(onClock.number, `INV-${clock.id}-000001`);
  assert.equal(second.number, `INV-${clock.id}-000002`);
  const created = (await app.request('GET', '/api/events?topic=invoice.created')).body.data;
  assert.deepEqual(
    created.map((event: { data: { number: string } }) => event.data.number).sort(),
    ['INV-000001', `INV-${clock.id}-000001`, `INV-${clock.id}-000002`].sort(),
    'invoice.created went out with those numbers',
  );

  assert.equal((await app.request('DELETE', `/api/test-clocks/${clock.id}`)).status, 204);
  const next = await customerWithChargeDue(app, plan.id, 'real2@example.com');
  assert.equal(next.number, 'INV-000002', 'the real sequence has no gap');
  const sequences = await app.deps.db.selectFrom('invoice_numbers').select('prefix').execute();
  assert.deepEqual(
    sequences.map((row) => row.prefix),
    ['INV'],
    "the clock's sequence went with it",
  );
});
