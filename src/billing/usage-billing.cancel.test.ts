// A subscription that ends bills the usage it used (SPEC §15 "Cancelling"), on both
// databases: cancelled now, its usage up to now is billed on a final invoice; a draft renewal
// the cancel voids gives its usage lines back (a late adjustment too) to that final invoice;
// cancelled at its period end, the last period's usage is billed by the worker as it ends;
// a plan without charges issues no final invoice. A change's preview bills the usage so far
// as the change will.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import { ingestCalls } from '../../test/helpers/usage.ts';
import { createPlan, createSubscription } from '../../test/helpers/factories.ts';
import { invoicesOf } from '../../test/helpers/invoice-payments.ts';
import { createMeter } from '../modules/meters/meters.service.ts';
import type { Invoice } from '../modules/invoices/invoices.lifecycle.ts';
import { applyPeriodEndCancellations, issueRenewalInvoices } from '../worker/subscriptions.jobs.ts';
import { applySuccessfulPayment } from './subscription-payments.ts';

const DAY = 86_400_000;
const MINUTE = 60_000;

/** An active subscription on a plan of 5,000 a month charging `unit` minor units a call (none when 0). */
async function metered(app: TestApp, unit = 10) {
  const meter = await createMeter(app.deps.db, app.deps.clock, {
    event_name: 'api_call',
    aggregation: 'count',
    display_name: 'API calls',
  });
  const plan = await createPlan(app, {
    name: 'Metered',
    amount: 5000,
    currency: 'NGN',
    charges: unit === 0 ? [] : [{ meter_id: meter.id, model: 'standard', unit_amount: unit }],
  });
  const created = await createSubscription(app, { planId: plan.id });
  const sub = await app.deps.db.transaction().execute((trx) => applySuccessfulPayment(trx, app.deps, created.id));
  return { plan, sub, start: Date.parse(sub.current_period_start!), end: Date.parse(sub.current_period_end!) };
}

const iso = (ms: number) => new Date(ms).toISOString();

const usageLines = (invoice: Invoice) =>
  invoice.lines.map((line) => [line.kind, line.amount, line.period_start, line.period_end]);

async function cancelNow(app: TestApp, id: string) {
  const res = await app.request('PUT', `/api/subscriptions/${id}/cancel`, { body: {} });
  assert.equal(res.status, 200, res.text);
}

/** The subscription's `usage` invoices, oldest first. */
async function finalInvoices(app: TestApp, id: string): Promise<Invoice[]> {
  const kinds = await app.deps.db
    .selectFrom('invoices')
    .select(['id', 'kind'])
    .where('subscription_id', '=', id)
    .execute();
  const usage = new Set(kinds.filter((row) => row.kind === 'usage').map((row) => row.id));
  return (await invoicesOf(app, id)).filter((invoice) => usage.has(invoice.id));
}

test('cancelled now: the usage up to now is billed once, on a final invoice that is open at once', async (t) => {
  const app = await buildTestApp(t);
  const { sub, start } = await metered(app);
  app.clock.set(new Date(start + 3 * DAY));
  await ingestCalls(app, sub.customer_id, start + 3 * DAY, 7);
  const cancelAt = start + 10 * DAY;
  app.clock.set(new Date(cancelAt));
  await cancelNow(app, sub.id);

  const [final, ...more] = await finalInvoices(app, sub.id);
  assert.equal(more.length, 0);
  assert.deepEqual(usageLines(final!), [['usage', 70, iso(start), iso(cancelAt)]]);
  assert.deepEqual(
    [final!.status, final!.total, final!.amount_due, final!.period_start, final!.period_end, final!.due_at],
    ['open', 70, 70, iso(start), iso(cancelAt), iso(cancelAt)],
  );
  // Cancelling again is refused and bills nothing more; later usage is not billed.
  await ingestCalls(app, sub.customer_id, cancelAt + MINUTE, 3);
  assert.equal((await app.request('PUT', `/api/subscriptions/${sub.id}/cancel`, { body: {} })).status, 409);
  assert.equal((await finalInvoices(app, sub.id)).length, 1);
  // The cancel and the final invoice's events commit together, at the cancel's time.
  const topics = await app.deps.db
    .selectFrom('events')
    .select('topic')
    .where('created_at', '=', iso(cancelAt))
    .orderBy('id')
    .execute();
  assert.deepEqual(
    topics.map((row) => row.topic).filter((topic) => topic.startsWith('subscription.') || topic.startsWith('invoice.')),
    ['subscription.cancelled', 'invoice.created'],
  );
});

test('cancelled while its renewal is a draft: the draft is voided, its usage and a late adjustment are billed on the final invoice', async (t) => {
  const app = await buildTestApp(t);
  const { sub, start, end } = await metered(app);
  // Period 1: 7 calls, billed by the renewal at its end (final once INVOICE_FINALIZE_DELAY passed).
  app.clock.set(new Date(start + 3 * DAY));
  await ingestCalls(app, sub.customer_id, start + 3 * DAY, 7);
  app.clock.set(new Date(end));
  assert.equal(await issueRenewalInvoices.run(app.deps), 1);
  const second = (await invoicesOf(app, sub.id))[1]!;
  const next = Date.parse(second.period_end);
  // Period 2: two late calls of period 1 and 4 of its own; the renewal at its end is a draft.
  app.clock.set(new Date(end + 2 * DAY));
  await ingestCalls(app, sub.customer_id, start + 20 * DAY, 2);
  await ingestCalls(app, sub.customer_id, end + 2 * DAY, 4);
  app.clock.set(new Date(next));
  assert.equal(await issueRenewalInvoices.run(app.deps), 1);
  const draft = (await invoicesOf(app, sub.id))[2]!;
  assert.equal(draft.status, 'draft');
  assert.deepEqual(usageLines(draft), [
    ['subscription', 5000, iso(next), draft.period_end],
    ['adjustment', 20, iso(start), iso(end)],
    ['usage', 40, iso(end), iso(next)],
  ]);

  // Period 3 has begun: one call, then a cancel before the draft is finalized.
  app.clock.set(new Date(next + 10 * MINUTE));
  await ingestCalls(app, sub.customer_id, next + 5 * MINUTE, 1);
  const cancelAt = next + 20 * MINUTE;
  app.clock.set(new Date(cancelAt));
  await cancelNow(app, sub.id);

  assert.equal((await invoicesOf(app, sub.id)).find((invoice) => invoice.id === draft.id)!.status, 'void');
  const [final, ...more] = await finalInvoices(app, sub.id);
  assert.equal(more.length, 0);
  assert.deepEqual(usageLines(final!), [
    ['adjustment', 20, iso(start), iso(end)],
    ['usage', 40, iso(end), iso(next)],
    ['usage', 10, iso(next), iso(cancelAt)],
  ]);
  assert.deepEqual([final!.status, final!.total], ['open', 70]);
  const billed = await app.deps.db
    .selectFrom('billed_usage')
    .select(['period_start', 'quantity', 'amount', 'invoice_id'])
    .where('subscription_id', '=', sub.id)
    .orderBy('period_start')
    .execute();
  assert.deepEqual(
    billed.map((row) => [iso(Date.parse(String(row.period_start))), row.quantity, Number(row.amount), row.invoice_id]),
    [
      [iso(start), '9', 90, final!.id],
      [iso(end), '4', 40, final!.id],
      [iso(next), '1', 10, final!.id],
    ],
  );
});

test('cancelled at its period end: the worker bills the last period’s usage as it ends; a plan without charges issues nothing', async (t) => {
  const app = await buildTestApp(t);
  const { sub, start, end } = await metered(app);
  app.clock.set(new Date(start + 3 * DAY));
  await ingestCalls(app, sub.customer_id, start + 3 * DAY, 5);
  const scheduled = await app.request('PUT', `/api/subscriptions/${sub.id}/cancel`, { body: { at_period_end: true } });
  assert.equal(scheduled.status, 200, scheduled.text);
  assert.equal((await finalInvoices(app, sub.id)).length, 0, 'nothing billed before the end');

  app.clock.set(new Date(end + MINUTE));
  assert.equal(await applyPeriodEndCancellations.run(app.deps), 1);
  assert.equal(await applyPeriodEndCancellations.run(app.deps), 0);
  const [final, ...more] = await finalInvoices(app, sub.id);
  assert.equal(more.length, 0);
  assert.deepEqual(usageLines(final!), [['usage', 50, iso(start), iso(end)]]);
  assert.equal(final!.status, 'open');

  const flat = await buildTestApp(t);
  const plain = await metered(flat, 0);
  flat.clock.set(new Date(plain.start + DAY));
  assert.equal(
    (await flat.request('PUT', `/api/subscriptions/${plain.sub.id}/cancel`, { body: { at_period_end: true } })).status,
    200,
  );
  flat.clock.set(new Date(plain.end + MINUTE));
  assert.equal(await applyPeriodEndCancellations.run(flat.deps), 1);
  assert.equal((await invoicesOf(flat, plain.sub.id)).length, 1, 'the first invoice only');
});

test("a change's preview bills the usage so far as the change will: at the old plan's price up to the change", async (t) => {
  const app = await buildTestApp(t);
  const { plan: cheap, sub, start, end } = await metered(app, 10);
  const meterId = JSON.parse(
    String(
      (await app.deps.db.selectFrom('plans').select('charges').where('id', '=', cheap.id).executeTakeFirstOrThrow())
        .charges,
    ),
  )[0].meter_id;
  const dear = await createPlan(app, {
    name: 'Dear',
    amount: 9000,
    currency: 'NGN',
    charges: [{ meter_id: meterId, model: 'standard', unit_amount: 25 }],
  });
  const yearly = await createPlan(app, {
    name: 'Yearly',
    amount: 90000,
    currency: 'NGN',
    interval: 'year',
    charges: [{ meter_id: meterId, model: 'standard', unit_amount: 25 }],
  });
  app.clock.set(new Date(start + 5 * DAY));
  await ingestCalls(app, sub.customer_id, start + 5 * DAY, 4);
  const change = start + 10 * DAY;
  app.clock.set(new Date(change));
  const usageOf = (lines: Invoice['lines']) =>
    lines
      .filter((line) => line.kind === 'usage')
      .map((line) => [line.amount, line.period_start, line.period_end, line.plan_id]);

  // An interval change: its new period's invoice bills the cut-short period's usage at once.
  const yearPreview = await app.request('POST', '/api/invoices/preview', {
    body: { subscription_id: sub.id, plan_id: yearly.id, proration_behavior: 'none' },
  });
  assert.equal(yearPreview.status, 200, yearPreview.text);
  assert.deepEqual(usageOf(yearPreview.body.lines), [[40, iso(start), iso(change), cheap.id]]);

  // A same-interval change: the renewal after it bills the usage before it at the old price.
  const preview = await app.request('POST', '/api/invoices/preview', {
    body: { subscription_id: sub.id, plan_id: dear.id, proration_behavior: 'none' },
  });
  assert.equal(preview.status, 200, preview.text);
  assert.deepEqual(usageOf(preview.body.lines), [[40, iso(start), iso(change), cheap.id]]);
  const patched = await app.request('PATCH', `/api/subscriptions/${sub.id}`, {
    body: { plan_id: dear.id, proration_behavior: 'none', proration_date: preview.body.proration_date },
  });
  assert.equal(patched.status, 200, patched.text);
  app.clock.set(new Date(end));
  assert.equal(await issueRenewalInvoices.run(app.deps), 1);
  const renewal = (await invoicesOf(app, sub.id)).at(-1)!;
  assert.deepEqual(usageOf(renewal.lines), usageOf(preview.body.lines));
});
