// A plan change's `always_invoice` invoice (SPEC §13) over HTTP, on both databases: it belongs
// to its subscription, so an unpaid or declined one makes the subscription `past_due` and is
// dunned as a renewal would be (Stripe's payment_behavior allow_incomplete), it takes the
// subscription's discount as its preview says (SPEC §14), and it never stands in for a period's invoice.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import { createCustomer, createPlan } from '../../test/helpers/factories.ts';
import { invoicesOf, runWorker } from '../../test/helpers/invoice-payments.ts';
import { saveTestPaymentMethod } from '../../test/helpers/payment-methods.ts';
import { appWithFakeProviders } from '../../test/helpers/provider-apps.ts';
import { applySuccessfulPayment } from '../billing/subscription-payments.ts';
import { issueRenewalInvoices } from '../worker/subscriptions.jobs.ts';

// The test app's clock starts at 2026-01-15T10:00:00Z: monthly periods of 31 days (Jan 15 – Feb 15).
const START = '2026-01-15T10:00:00.000Z';
const MID = '2026-01-31T10:00:00.000Z'; // 15 of 31 days left
const END = '2026-02-15T10:00:00.000Z';
const HOUR = 3_600_000; // RENEWAL_GRACE default

/** An active subscription (its first invoice paid) of a new customer on a new `currency` plan `Basic` (1000). */
async function activeSubscription(app: TestApp, currency: string, more: Record<string, unknown> = {}) {
  const basic = await createPlan(app, { name: 'Basic', amount: 1000, currency });
  const pro = await createPlan(app, { name: 'Pro', amount: 2000, currency });
  const customer = await createCustomer(app);
  const res = await app.request('POST', '/api/subscriptions', {
    body: { customer_id: customer.id, plan_id: basic.id, ...more },
  });
  assert.equal(res.status, 201, res.text);
  await app.deps.db.transaction().execute((trx) => applySuccessfulPayment(trx, app.deps, res.body.id));
  return { sub: res.body as { id: string; customer_id: string }, pro };
}

async function upgrade(app: TestApp, subscriptionId: string, planId: string, prorationDate: string) {
  const res = await app.request('PATCH', `/api/subscriptions/${subscriptionId}`, {
    body: { plan_id: planId, proration_behavior: 'always_invoice', proration_date: prorationDate },
  });
  assert.equal(res.status, 200, res.text);
  return res.body;
}

async function dunningCases(app: TestApp, subscriptionId: string) {
  return app.deps.db
    .selectFrom('dunning_cases')
    .select(['reason', 'invoice_id', 'status', 'amount_due'])
    .where('subscription_id', '=', subscriptionId)
    .execute();
}

const linesOf = (invoice: { lines: { kind: string; amount: number; description: string }[] }) =>
  invoice.lines.map((line) => [line.kind, line.amount, line.description]);

test("an always_invoice invoice is its subscription's: unpaid RENEWAL_GRACE after it is due the subscription is past_due and dunned for it; paying it ends that", async (t) => {
  const app = await buildTestApp(t);
  const { sub, pro } = await activeSubscription(app, 'USD');
  // Prorated at the period's very start: the change's invoice starts where the period's does,
  // and is a new invoice beside it (the one-per-period rule is for period invoices).
  await upgrade(app, sub.id, pro.id, START);
  const invoices = await invoicesOf(app, sub.id);
  assert.equal(invoices.length, 2, "the first period and the change, both the subscription's");
  const change = invoices.find((invoice) => invoice.status === 'open')!;
  assert.deepEqual(
    [change.subscription_id, change.period_start, change.period_end, change.total, change.metadata],
    [sub.id, START, END, 1000, {}],
  );
  assert.deepEqual(linesOf(change), [
    ['proration', -1000, 'Unused time on Basic × 1 after 15 Jan 2026'],
    ['proration', 2000, 'Remaining time on Pro × 1 after 15 Jan 2026'],
  ]);

  app.clock.set(new Date(Date.parse(START) + HOUR - 1000));
  assert.equal((await runWorker(app.deps)).mark_unpaid_renewals_past_due, 0, 'not before RENEWAL_GRACE');
  app.clock.set(new Date(Date.parse(START) + HOUR));
  assert.equal((await runWorker(app.deps)).mark_unpaid_renewals_past_due, 1);
  assert.equal((await app.request('GET', `/api/subscriptions/${sub.id}`)).body.status, 'past_due');
  assert.deepEqual(
    (await dunningCases(app, sub.id)).map((c) => [c.reason, c.invoice_id, c.status, Number(c.amount_due)]),
    [['renewal_unpaid', change.id, 'open', 1000]],
  );

  const paid = await app.request('POST', `/api/invoices/${change.id}/pay`, {
    body: { paid_out_of_band: true, reference: 'TRF-1' },
  });
  assert.equal(paid.status, 200, paid.text);
  assert.equal(paid.body.status, 'paid');
  assert.equal((await app.request('GET', `/api/subscriptions/${sub.id}`)).body.status, 'active');
  assert.deepEqual(
    (await dunningCases(app, sub.id)).map((c) => c.status),
    ['recovered'],
  );
  // The renewal bills the next period once: the change's invoice is no period's.
  app.clock.set(new Date(END));
  assert.equal(await issueRenewalInvoices.run(app.deps), 1);
  const renewal = (await invoicesOf(app, sub.id)).find((invoice) => invoice.period_start === END)!;
  assert.deepEqual(linesOf(renewal), [['subscription', 2000, 'Pro × 1, 15 Feb 2026 – 15 Mar 2026']]);
});

test('a declined charge of an always_invoice invoice makes its subscription past_due with a dunning case for it', async (t) => {
  const app = await appWithFakeProviders(t);
  app.paystack.webhookTarget = { url: app.baseUrl };
  const { sub, pro } = await activeSubscription(app, 'NGN');
  await saveTestPaymentMethod(app, sub.customer_id, 'paystack');
  app.paystack.defaultChargeOutcome = 'insufficient_funds';
  app.clock.set(new Date(MID));
  await upgrade(app, sub.id, pro.id, MID);
  const change = (await invoicesOf(app, sub.id)).find((invoice) => invoice.status === 'open')!;
  assert.equal(change.next_payment_attempt_at, MID, 'charged at once');
  await runWorker(app.deps);
  assert.equal(app.paystack.totalCharges, 1);
  const after = (await app.request('GET', `/api/invoices/${change.id}`)).body;
  assert.deepEqual([after.status, after.attempt_count], ['open', 1]);
  assert.equal((await app.request('GET', `/api/subscriptions/${sub.id}`)).body.status, 'past_due');
  assert.deepEqual(
    (await dunningCases(app, sub.id)).map((c) => [c.reason, c.invoice_id, c.status]),
    [['payment_failed', change.id, 'open']],
  );
});

test("an always_invoice invoice takes the subscription's discount, as its preview said; a once coupon it took is not taken again", async (t) => {
  const app = await buildTestApp(t);
  const coupon = async (body: Record<string, unknown>) => {
    const res = await app.request('POST', '/api/coupons', { body });
    assert.equal(res.status, 201, res.text);
    return res.body.id as string;
  };
  const launch = await coupon({ name: 'Launch', percent_off: 20, duration: 'forever' });
  const { sub, pro } = await activeSubscription(app, 'USD', { coupon: launch });
  app.clock.set(new Date(MID));
  const preview = await app.request('POST', '/api/invoices/preview', {
    body: { subscription_id: sub.id, plan_id: pro.id, proration_behavior: 'always_invoice', proration_date: MID },
  });
  assert.equal(preview.status, 200, preview.text);
  // −484 + 968 = 484; 20 % of it: 96.8 → 97.
  const expected = [
    ['proration', -484, 'Unused time on Basic × 1 after 31 Jan 2026'],
    ['proration', 968, 'Remaining time on Pro × 1 after 31 Jan 2026'],
    ['discount', -97, 'Launch (20% off)'],
  ];
  assert.deepEqual(linesOf(preview.body), expected);
  await upgrade(app, sub.id, pro.id, MID);
  const change = (await invoicesOf(app, sub.id)).find((invoice) => invoice.status === 'open')!;
  assert.deepEqual(linesOf(change), expected);
  assert.deepEqual([change.total_discount, change.total], [97, 387]);

  // A `once` coupon: the change's invoice takes it, the renewal after it does not.
  const welcome = await coupon({ name: 'Welcome', amount_off: 100, currency: 'USD', duration: 'once' });
  const patched = await app.request('PATCH', `/api/subscriptions/${sub.id}`, { body: { coupon: welcome } });
  assert.equal(patched.status, 200, patched.text);
  const team = await createPlan(app, { name: 'Team', amount: 3000, currency: 'USD' });
  await upgrade(app, sub.id, team.id, MID);
  const second = (await invoicesOf(app, sub.id)).filter((invoice) => invoice.status === 'open').at(-1)!;
  assert.deepEqual(
    second.lines.filter((line) => line.kind === 'discount').map((line) => [line.amount, line.description]),
    [[-100, 'Welcome ($1.00 off)']],
  );
  app.clock.set(new Date(END));
  assert.equal(await issueRenewalInvoices.run(app.deps), 1);
  const renewal = (await invoicesOf(app, sub.id)).find((invoice) => invoice.period_start === END)!;
  assert.deepEqual(linesOf(renewal), [['subscription', 3000, 'Team × 1, 15 Feb 2026 – 15 Mar 2026']]);
});
