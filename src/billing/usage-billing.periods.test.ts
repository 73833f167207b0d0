// Usage billed exactly once whatever happens to its period (SPEC §15), on both databases: a
// period whose successor was paid in advance bills its usage on an invoice of its own; a plan
// change bills the usage recorded before it — late events included — at the old plan's
// charges, even when the new plan does not charge the meter; a meter gone refuses the renewal
// instead of billing nothing.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import { ingestCalls } from '../../test/helpers/usage.ts';
import { createPlan, createSubscription } from '../../test/helpers/factories.ts';
import { invoiceById, invoicesOf, reportPayment } from '../../test/helpers/invoice-payments.ts';
import { PROVIDER_ENV } from '../../test/helpers/provider-events.ts';
import { transactionWithRetry } from '../db/transaction.ts';
import { createMeter } from '../modules/meters/meters.service.ts';
import type { Invoice } from '../modules/invoices/invoices.lifecycle.ts';
import { issueRenewalInvoices } from '../worker/subscriptions.jobs.ts';
import { applySuccessfulPayment } from './subscription-payments.ts';
import { renewSubscription } from './renewals.ts';
import { MeterMissingError } from './usage-billing.ts';

const DAY = 86_400_000;

/** The app's clock moved to `at` (ms). */
function setClock(app: TestApp, at: number) {
  app.clock.set(new Date(at));
}

/** A calls meter (late events billed next invoice), and a plan charging `unit` minor units a call. */
async function callsPlan(app: TestApp, unit: number, amount = 5000, name = 'Metered') {
  const meter =
    (await app.deps.db.selectFrom('meters').selectAll().where('event_name', '=', 'api_call').executeTakeFirst()) ??
    (await createMeter(app.deps.db, app.deps.clock, {
      event_name: 'api_call',
      aggregation: 'count',
      display_name: 'API calls',
    }));
  const plan = await createPlan(app, {
    name,
    amount,
    currency: 'NGN',
    charges: unit === 0 ? [] : [{ meter_id: meter.id, model: 'standard', unit_amount: unit }],
  });
  return { meter, plan };
}

/** An active subscription (first invoice paid) on `planId`; returns it with its period bounds in ms. */
async function activeSubscription(app: TestApp, planId: string) {
  const created = await createSubscription(app, { planId });
  const sub = await app.deps.db.transaction().execute((trx) => applySuccessfulPayment(trx, app.deps, created.id));
  return { sub, start: Date.parse(sub.current_period_start!), end: Date.parse(sub.current_period_end!) };
}

/** Every invoice of the subscription's customer, oldest first, as the API shows it. */
async function customerInvoices(app: TestApp, customerId: string): Promise<Invoice[]> {
  const rows = await app.deps.db
    .selectFrom('invoices')
    .select('id')
    .where('customer_id', '=', customerId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return Promise.all(rows.map((row) => invoiceById(app, row.id)));
}

const usageLines = (invoice: Invoice) =>
  invoice.lines
    .filter((line) => line.kind === 'usage' || line.kind === 'adjustment')
    .map((line) => [line.kind, line.description, line.amount, line.period_start, line.period_end, line.plan_id]);

const iso = (ms: number) => new Date(ms).toISOString();

test('a period whose successor was paid in advance bills its usage once, on an invoice of its own, and late usage after it', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const { plan } = await callsPlan(app, 10);
  const { sub, start, end } = await activeSubscription(app, plan.id);
  setClock(app, start + 3 * DAY);
  await ingestCalls(app, sub.customer_id, start + 3 * DAY, 7);
  // Nothing is payable: the payment issues the next period's invoice and pays it in advance.
  assert.equal((await reportPayment(app, { subscriptionId: sub.id, amount: 5000 })).status, 200);
  const advance = (await invoicesOf(app, sub.id))[1]!;
  assert.deepEqual([advance.status, advance.period_start], ['paid', iso(end)]);

  setClock(app, end);
  assert.equal(await issueRenewalInvoices.run(app.deps), 1);
  const all = await customerInvoices(app, sub.customer_id);
  assert.equal(all.length, 3, 'the first invoice, the one paid in advance, the usage invoice');
  const usage = all[2]!;
  assert.deepEqual(usageLines(usage), [['usage', 'API calls × 0.10', 70, iso(start), iso(end), plan.id]]);
  assert.deepEqual(
    [usage.subscription_id, usage.status, usage.period_start, usage.period_end],
    [sub.id, 'draft', iso(start), iso(end)],
  );
  assert.equal(usage.total, 70);
  // The advance invoice is untouched.
  assert.deepEqual((await invoiceById(app, advance.id)).lines, advance.lines);

  // Two late calls of the first period, and three of the second: the next renewal bills each once.
  setClock(app, end + 2 * DAY);
  await ingestCalls(app, sub.customer_id, start + 20 * DAY, 2);
  await ingestCalls(app, sub.customer_id, end + 2 * DAY, 3);
  const next = Date.parse(advance.period_end);
  setClock(app, next);
  assert.equal(await issueRenewalInvoices.run(app.deps), 1);
  const renewal = (await invoicesOf(app, sub.id)).find((invoice) => invoice.period_start === advance.period_end)!;
  assert.deepEqual(usageLines(renewal), [
    ['adjustment', `API calls, late usage of ${dates(start, end)}: 7 → 9 units`, 20, iso(start), iso(end), plan.id],
    ['usage', 'API calls × 0.10', 30, iso(end), iso(next), plan.id],
  ]);
  assert.equal((await customerInvoices(app, sub.customer_id)).length, 4, 'no second usage invoice');
  const billed = await app.deps.db
    .selectFrom('billed_usage')
    .select(['period_start', 'quantity', 'amount'])
    .where('subscription_id', '=', sub.id)
    .orderBy('period_start')
    .execute();
  assert.deepEqual(
    billed.map((row) => [iso(Date.parse(String(row.period_start))), row.quantity, Number(row.amount)]),
    [
      [iso(start), '9', 90],
      [iso(end), '3', 30],
    ],
  );
});

test('a period paid in advance with no usage to bill issues no usage invoice, and its late usage still bills once', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const { plan } = await callsPlan(app, 10);
  const { sub, start, end } = await activeSubscription(app, plan.id);
  setClock(app, start + DAY);
  assert.equal((await reportPayment(app, { subscriptionId: sub.id, amount: 5000 })).status, 200);
  setClock(app, end);
  assert.equal(await issueRenewalInvoices.run(app.deps), 1);
  assert.equal((await customerInvoices(app, sub.customer_id)).length, 2);
  setClock(app, end + DAY);
  await ingestCalls(app, sub.customer_id, end - DAY, 4);
  const next = Date.parse((await invoicesOf(app, sub.id))[1]!.period_end);
  setClock(app, next);
  assert.equal(await issueRenewalInvoices.run(app.deps), 1);
  const renewal = (await invoicesOf(app, sub.id))[2]!;
  assert.deepEqual(usageLines(renewal), [
    ['adjustment', `API calls, late usage of ${dates(start, end)}: 0 → 4 units`, 40, iso(start), iso(end), plan.id],
  ]);
});

test("a change to a plan without the meter bills the usage before it at the old plan's price, late usage included", async (t) => {
  const app = await buildTestApp(t);
  const { plan: metered } = await callsPlan(app, 10, 5000, 'Metered');
  // Dearer and without charges: an upgrade, applied at once.
  const { plan: flat } = await callsPlan(app, 0, 9000, 'Flat');
  const { sub, start, end } = await activeSubscription(app, metered.id);
  setClock(app, start + 5 * DAY);
  await ingestCalls(app, sub.customer_id, start + 5 * DAY, 4);
  const change = start + 10 * DAY;
  setClock(app, change);
  const patched = await app.request('PATCH', `/api/subscriptions/${sub.id}`, {
    body: { plan_id: flat.id, proration_behavior: 'none' },
  });
  assert.equal(patched.status, 200, patched.text);
  // After the change: calls the flat plan does not charge, and one late call from before it.
  setClock(app, start + 12 * DAY);
  await ingestCalls(app, sub.customer_id, start + 12 * DAY, 3);
  await ingestCalls(app, sub.customer_id, start + 4 * DAY, 1);

  setClock(app, end);
  assert.equal(await issueRenewalInvoices.run(app.deps), 1);
  const renewal = (await invoicesOf(app, sub.id))[1]!;
  assert.deepEqual(usageLines(renewal), [['usage', 'API calls × 0.10', 50, iso(start), iso(change), metered.id]]);
  assert.equal(renewal.total, 9000 + 50);

  // A call of the metered stretch arrives late: the next renewal bills it at the metered price.
  setClock(app, end + DAY);
  await ingestCalls(app, sub.customer_id, start + 9 * DAY, 1);
  const next = Date.parse(renewal.period_end);
  setClock(app, next);
  assert.equal(await issueRenewalInvoices.run(app.deps), 1);
  const after = (await invoicesOf(app, sub.id))[2]!;
  assert.deepEqual(usageLines(after), [
    [
      'adjustment',
      `API calls, late usage of ${dates(start, change)}: 5 → 6 units`,
      10,
      iso(start),
      iso(change),
      metered.id,
    ],
  ]);
});

test("a mid-period change between two metered plans splits the period at the change, each stretch at its plan's price", async (t) => {
  const app = await buildTestApp(t);
  const { plan: basic } = await callsPlan(app, 10, 5000, 'Basic');
  const { plan: pro } = await callsPlan(app, 25, 9000, 'Pro');
  const { sub, start, end } = await activeSubscription(app, basic.id);
  setClock(app, start + 2 * DAY);
  await ingestCalls(app, sub.customer_id, start + 2 * DAY, 6);
  const change = start + 8 * DAY;
  setClock(app, change);
  const patched = await app.request('PATCH', `/api/subscriptions/${sub.id}`, {
    body: { plan_id: pro.id, proration_behavior: 'create_prorations' },
  });
  assert.equal(patched.status, 200, patched.text);
  setClock(app, start + 9 * DAY);
  await ingestCalls(app, sub.customer_id, start + 9 * DAY, 2);
  setClock(app, end);
  assert.equal(await issueRenewalInvoices.run(app.deps), 1);
  const renewal = (await invoicesOf(app, sub.id))[1]!;
  assert.deepEqual(usageLines(renewal), [
    ['usage', 'API calls × 0.10', 60, iso(start), iso(change), basic.id],
    ['usage', 'API calls × 0.25', 50, iso(change), iso(end), pro.id],
  ]);
});

test("a downgrade scheduled for the period end bills the ended period's usage at the plan it was recorded under", async (t) => {
  const app = await buildTestApp(t);
  const { plan: pro } = await callsPlan(app, 25, 9000, 'Pro');
  const { plan: basic } = await callsPlan(app, 10, 5000, 'Basic');
  const { sub, start, end } = await activeSubscription(app, pro.id);
  setClock(app, start + 2 * DAY);
  await ingestCalls(app, sub.customer_id, start + 2 * DAY, 4);
  const patched = await app.request('PATCH', `/api/subscriptions/${sub.id}`, { body: { plan_id: basic.id } });
  assert.equal(patched.status, 200, patched.text);
  assert.equal(patched.body.pending_update.plan_id, basic.id);
  // The preview of that renewal agrees.
  const preview = await app.request('POST', '/api/invoices/preview', { body: { subscription_id: sub.id } });
  assert.equal(preview.status, 200, preview.text);
  assert.deepEqual(
    preview.body.lines.filter((l: { kind: string }) => l.kind === 'usage').map((l: { amount: number }) => l.amount),
    [100],
  );
  setClock(app, end);
  assert.equal(await issueRenewalInvoices.run(app.deps), 1);
  const renewal = (await invoicesOf(app, sub.id))[1]!;
  assert.deepEqual(usageLines(renewal), [['usage', 'API calls × 0.25', 100, iso(start), iso(end), pro.id]]);
  assert.equal(renewal.lines[0]!.plan_id, basic.id, 'the new period is billed on the new plan');
});

test('an interval change bills the usage of the period it cuts short on the new period’s invoice', async (t) => {
  const app = await buildTestApp(t);
  const { plan: monthly } = await callsPlan(app, 10, 5000, 'Monthly');
  const meter = (await app.deps.db.selectFrom('meters').select('id').executeTakeFirstOrThrow()).id;
  const yearly = await createPlan(app, {
    name: 'Yearly',
    amount: 50000,
    currency: 'NGN',
    interval: 'year',
    charges: [{ meter_id: meter, model: 'standard', unit_amount: 5 }],
  });
  const { sub, start } = await activeSubscription(app, monthly.id);
  setClock(app, start + 3 * DAY);
  await ingestCalls(app, sub.customer_id, start + 3 * DAY, 5);
  const change = start + 6 * DAY;
  setClock(app, change);
  const patched = await app.request('PATCH', `/api/subscriptions/${sub.id}`, { body: { plan_id: yearly.id } });
  assert.equal(patched.status, 200, patched.text);
  const invoice = (await invoicesOf(app, sub.id))[1]!;
  assert.equal(invoice.period_start, iso(change));
  assert.deepEqual(usageLines(invoice), [['usage', 'API calls × 0.10', 50, iso(start), iso(change), monthly.id]]);
});

test('a charge whose meter is gone refuses the renewal (MeterMissingError) instead of billing nothing', async (t) => {
  const app = await buildTestApp(t);
  const { plan, meter } = await callsPlan(app, 10);
  const { sub, start, end } = await activeSubscription(app, plan.id);
  setClock(app, start + DAY);
  await ingestCalls(app, sub.customer_id, start + DAY, 3);
  // No route deletes a meter; a row removed behind the API's back must not lose the usage silently.
  await app.deps.db.deleteFrom('meters').where('id', '=', meter.id).execute();
  setClock(app, end);
  const row = await app.deps.db
    .selectFrom('subscriptions')
    .selectAll()
    .where('id', '=', sub.id)
    .executeTakeFirstOrThrow();
  await assert.rejects(
    transactionWithRetry(app.deps.db, (trx) => renewSubscription(trx, app.deps, row)),
    (error: unknown) => error instanceof MeterMissingError && error.message.includes(meter.id),
  );
  await issueRenewalInvoices.run(app.deps).catch(() => undefined);
  assert.equal((await invoicesOf(app, sub.id)).length, 1, 'no renewal issued without its usage');
  const after = await app.deps.db
    .selectFrom('subscriptions')
    .selectAll()
    .where('id', '=', sub.id)
    .executeTakeFirstOrThrow();
  assert.equal(Date.parse(after.current_period_end!), end, 'the period did not move: the renewal is retried');
});

/** "1 Mar 2026 – 1 Apr 2026": a period as the adjustment lines name it (UTC). */
function dates(from: number, to: number): string {
  const format = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short', year: 'numeric', timeZone: 'UTC' });
  return `${format.format(new Date(from))} – ${format.format(new Date(to))}`;
}
