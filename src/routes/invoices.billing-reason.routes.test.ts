// An invoice's `billing_reason` (SPEC §9 "Billing reason") over HTTP, on both databases: each
// kind of invoice reads Stripe's reason for it on GET one, in the list, and in the
// `invoice.created` event that webhooks deliver.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import { createPlan, createSubscription } from '../../test/helpers/factories.ts';
import { runWorker } from '../../test/helpers/invoice-payments.ts';
import { ingestCalls } from '../../test/helpers/usage.ts';
import { issueOneOffInvoice } from '../billing/issue.ts';
import { applySuccessfulPayment } from '../billing/subscription-payments.ts';
import { lockCustomer } from '../modules/customers/customers.service.ts';
import { createMeter } from '../modules/meters/meters.service.ts';

// The test app's clock starts at 2026-01-15T10:00:00Z: monthly periods of 31 days.
const START = '2026-01-15T10:00:00.000Z';
const END = '2026-02-15T10:00:00.000Z';
const DAY = 86_400_000;

/**
 * The reason invoice `id` shows on GET one, in the list of its customer's invoices and in its
 * `invoice.created` event; fails the test unless the three agree.
 */
async function reasonOf(app: TestApp, id: string): Promise<string> {
  const one = await app.request('GET', `/api/invoices/${id}`);
  assert.equal(one.status, 200, one.text);
  const list = await app.request('GET', `/api/invoices?customer_id=${one.body.customer_id}&limit=100`);
  const listed = list.body.data.find((invoice: { id: string }) => invoice.id === id);
  const events = await app.deps.db.selectFrom('events').select('data').where('topic', '=', 'invoice.created').execute();
  const created = events.map((row) => JSON.parse(row.data)).find((invoice: { id: string }) => invoice.id === id);
  assert.deepEqual(
    [listed?.billing_reason, created?.billing_reason],
    [one.body.billing_reason, one.body.billing_reason],
  );
  return one.body.billing_reason;
}

/** The ids of subscription `id`'s invoices of `kind`, oldest first. */
async function invoiceIds(app: TestApp, subscriptionId: string, kind: string): Promise<string[]> {
  const rows = await app.deps.db
    .selectFrom('invoices')
    .select('id')
    .where('subscription_id', '=', subscriptionId)
    .where('kind', '=', kind as never)
    .orderBy('period_start')
    .execute();
  return rows.map((row) => row.id);
}

test("a period's invoice, the first and a renewal, reads subscription_cycle", async (t) => {
  const app = await buildTestApp(t);
  const sub = await createSubscription(app);
  await app.deps.db.transaction().execute((trx) => applySuccessfulPayment(trx, app.deps, sub.id));
  app.clock.set(new Date(END));
  await runWorker(app.deps);
  const [first, renewal, ...more] = await invoiceIds(app, sub.id, 'period');
  assert.equal(more.length, 0);
  assert.ok(renewal, 'the renewal was issued');
  assert.deepEqual(
    [await reasonOf(app, first!), await reasonOf(app, renewal)],
    ['subscription_cycle', 'subscription_cycle'],
  );
});

test("a plan change's always_invoice invoice of prorations reads subscription_update", async (t) => {
  const app = await buildTestApp(t);
  const pro = await createPlan(app, { name: 'Pro', amount: 10000 });
  const sub = await createSubscription(app);
  await app.deps.db.transaction().execute((trx) => applySuccessfulPayment(trx, app.deps, sub.id));
  app.clock.set(new Date(Date.parse(START) + 10 * DAY));
  const res = await app.request('PATCH', `/api/subscriptions/${sub.id}`, {
    body: { plan_id: pro.id, proration_behavior: 'always_invoice' },
  });
  assert.equal(res.status, 200, res.text);
  const [change, ...more] = await invoiceIds(app, sub.id, 'proration');
  assert.equal(more.length, 0);
  assert.equal(await reasonOf(app, change!), 'subscription_update');
});

test("a cancel's final usage invoice reads subscription_cycle", async (t) => {
  const app = await buildTestApp(t);
  const meter = await createMeter(app.deps.db, app.deps.clock, {
    event_name: 'api_call',
    aggregation: 'count',
    display_name: 'API calls',
  });
  const plan = await createPlan(app, { charges: [{ meter_id: meter.id, model: 'standard', unit_amount: 10 }] });
  const sub = await createSubscription(app, { planId: plan.id });
  await app.deps.db.transaction().execute((trx) => applySuccessfulPayment(trx, app.deps, sub.id));
  app.clock.set(new Date(Date.parse(START) + DAY));
  await ingestCalls(app, sub.customer_id, Date.parse(START) + DAY, 3);
  app.clock.set(new Date(Date.parse(START) + 2 * DAY));
  const res = await app.request('PUT', `/api/subscriptions/${sub.id}/cancel`, { body: {} });
  assert.equal(res.status, 200, res.text);
  const [final, ...more] = await invoiceIds(app, sub.id, 'usage');
  assert.equal(more.length, 0);
  assert.equal(await reasonOf(app, final!), 'subscription_cycle');
});

test('a one-off invoice, of no subscription, reads manual', async (t) => {
  const app = await buildTestApp(t);
  const sub = await createSubscription(app);
  const invoice = await app.deps.db.transaction().execute(async (trx) => {
    await lockCustomer(trx, sub.customer_id);
    return issueOneOffInvoice(trx, app.deps, {
      customerId: sub.customer_id,
      testClockId: null,
      currency: 'NGN',
      items: [
        {
          kind: 'proration',
          description: 'Remaining time on Pro × 1 after 15 Jan 2026',
          amount: 2500,
          currency: 'NGN',
          quantity: 1,
          unit_amount: 2500,
          period_start: START,
          period_end: END,
          plan_id: null,
          proration: true,
        },
      ],
      periodStart: START,
      periodEnd: END,
      dueAt: START,
    });
  });
  assert.equal(invoice.subscription_id, null);
  assert.equal(await reasonOf(app, invoice.id), 'manual');
});
