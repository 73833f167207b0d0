// The billing cycle anchor and the credit balance (SPEC §4, §12, §14), end to end on both
// databases: provider payments through POST /api/notify, renewals by the worker at the test
// clock's time. Periods follow the anchor whenever they are paid; a payment with nothing to
// pay pays the next period in advance; what a payment leaves over is credit the next invoice
// takes.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import { ON_POSTGRES } from '../../test/helpers/database.ts';
import { createCustomer, createPlan, createSubscription } from '../../test/helpers/factories.ts';
import { invoicesOf, reportPayment, runWorker } from '../../test/helpers/invoice-payments.ts';
import { PROVIDER_ENV } from '../../test/helpers/provider-events.ts';
import { saveTestPaymentMethod } from '../../test/helpers/payment-methods.ts';
import { issueRenewalInvoices } from '../worker/subscriptions.jobs.ts';
import { previewInvoice } from './plan-changes.ts';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

async function subscription(app: TestApp, id: string) {
  return (await app.request('GET', `/api/subscriptions/${id}`)).body;
}

async function balances(app: TestApp, customerId: string) {
  return (await app.request('GET', `/api/customers/${customerId}`)).body.balances;
}

/** `period_start → period_end status` of each invoice of the subscription, oldest first. */
async function periods(app: TestApp, id: string): Promise<string[]> {
  return (await invoicesOf(app, id)).map((i) => `${i.period_start} → ${i.period_end} ${i.status}`);
}

/** An active monthly subscription (5000 NGN) created 2026-01-15T10:00Z, its first invoice paid with `amount`. */
async function activeSubscription(app: TestApp, amount = 5000) {
  const sub = await createSubscription(app);
  assert.equal((await reportPayment(app, { subscriptionId: sub.id, amount })).status, 200);
  assert.equal((await subscription(app, sub.id)).status, 'active');
  return sub;
}

test('a late payment never shifts the anchor: the next renewal is still on the 15th', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const sub = await activeSubscription(app);
  app.clock.set(new Date('2026-02-15T10:00:00.000Z'));
  await runWorker(app.deps);
  const renewed = await subscription(app, sub.id);
  // The renewal moved the period whether or not it is paid; its invoice is open.
  assert.deepEqual(
    [renewed.current_period_start, renewed.current_period_end],
    ['2026-02-15T10:00:00.000Z', '2026-03-15T10:00:00.000Z'],
  );
  // Three days late: past RENEWAL_GRACE, so past_due with a dunning case.
  app.clock.advance(3 * DAY + 7 * HOUR);
  await runWorker(app.deps);
  assert.equal((await subscription(app, sub.id)).status, 'past_due');
  assert.equal((await reportPayment(app, { subscriptionId: sub.id, amount: 5000 })).status, 200);
  const paid = await subscription(app, sub.id);
  assert.equal(paid.status, 'active');
  assert.deepEqual(
    [paid.current_period_start, paid.current_period_end, paid.billing_cycle_anchor],
    ['2026-02-15T10:00:00.000Z', '2026-03-15T10:00:00.000Z', '2026-01-15T10:00:00.000Z'],
  );
  app.clock.set(new Date('2026-03-15T10:00:00.000Z'));
  await runWorker(app.deps);
  assert.deepEqual(await periods(app, sub.id), [
    '2026-01-15T10:00:00.000Z → 2026-02-15T10:00:00.000Z paid',
    '2026-02-15T10:00:00.000Z → 2026-03-15T10:00:00.000Z paid',
    '2026-03-15T10:00:00.000Z → 2026-04-15T10:00:00.000Z open',
  ]);
  const cases = await app.request('GET', `/api/dunning/cases?status=recovered`);
  assert.equal(cases.body.total, 1, 'the case recovered when its invoice was paid');
});

test('an incomplete subscription paid late keeps the first period from its creation', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const sub = await createSubscription(app);
  app.clock.advance(20 * HOUR);
  await reportPayment(app, { subscriptionId: sub.id, amount: 5000 });
  const paid = await subscription(app, sub.id);
  assert.equal(paid.status, 'active');
  assert.deepEqual(
    [paid.current_period_start, paid.current_period_end],
    ['2026-01-15T10:00:00.000Z', '2026-02-15T10:00:00.000Z'],
  );
});

test('an early payment, with nothing payable, pays the next invoice; the renewal finds it paid and issues none', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const sub = await activeSubscription(app);
  app.clock.set(new Date('2026-01-25T08:00:00.000Z'));
  await reportPayment(app, { subscriptionId: sub.id, amount: 5000 });
  const [, advance] = await invoicesOf(app, sub.id);
  assert.deepEqual(
    [advance!.period_start, advance!.period_end, advance!.due_at, advance!.status],
    ['2026-02-15T10:00:00.000Z', '2026-03-15T10:00:00.000Z', '2026-02-15T10:00:00.000Z', 'paid'],
  );
  const created = async () => (await app.request('GET', '/api/events?topic=invoice.created')).body.meta.total;
  const before = await created();
  app.clock.set(new Date('2026-02-15T10:00:00.000Z'));
  await runWorker(app.deps);
  assert.equal(await created(), before, 'the period was invoiced already');
  const renewed = await subscription(app, sub.id);
  assert.equal(renewed.status, 'active');
  assert.deepEqual(
    [renewed.current_period_start, renewed.current_period_end],
    ['2026-02-15T10:00:00.000Z', '2026-03-15T10:00:00.000Z'],
  );
  // Nothing is owed, so nothing goes past due; the next renewal invoices the period after.
  app.clock.set(new Date('2026-03-15T10:00:00.000Z'));
  await runWorker(app.deps);
  assert.equal((await subscription(app, sub.id)).status, 'active');
  assert.deepEqual((await periods(app, sub.id)).at(-1), '2026-03-15T10:00:00.000Z → 2026-04-15T10:00:00.000Z open');
});

test('a partial payment in advance leaves the next invoice open; the renewal charges what remains when it begins', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const sub = await activeSubscription(app);
  app.clock.set(new Date('2026-02-01T00:00:00.000Z'));
  await reportPayment(app, { subscriptionId: sub.id, amount: 2000 });
  const [, advance] = await invoicesOf(app, sub.id);
  assert.deepEqual([advance!.status, advance!.amount_paid, advance!.amount_remaining], ['open', 2000, 3000]);
  // Not overdue before its period begins: due at its start.
  app.clock.set(new Date('2026-02-15T09:00:00.000Z'));
  await runWorker(app.deps);
  assert.equal((await subscription(app, sub.id)).status, 'active');
  app.clock.set(new Date('2026-02-15T11:00:00.000Z'));
  await runWorker(app.deps);
  assert.equal((await subscription(app, sub.id)).status, 'past_due', 'RENEWAL_GRACE after its start');
  await reportPayment(app, { subscriptionId: sub.id, amount: 3000 });
  assert.equal((await invoicesOf(app, sub.id))[1]!.status, 'paid');
  assert.equal((await subscription(app, sub.id)).status, 'active');
});

test('the renewal schedules the charge of a period partly paid in advance (a saved method), once', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const sub = await activeSubscription(app);
  app.clock.set(new Date('2026-02-01T00:00:00.000Z'));
  await reportPayment(app, { subscriptionId: sub.id, amount: 2000 });
  await saveTestPaymentMethod(app, sub.customer_id, 'paystack');
  const [, advance] = await invoicesOf(app, sub.id);
  assert.equal(advance!.next_payment_attempt_at, null, 'not charged before its period begins');
  app.clock.set(new Date('2026-02-15T10:00:00.000Z'));
  // Only the renewal job: the charge itself is the charges tests' (they have fake providers).
  assert.equal(await issueRenewalInvoices.run(app.deps), 1);
  const [, reached] = await invoicesOf(app, sub.id);
  assert.deepEqual(
    [reached!.id, reached!.next_payment_attempt_at, reached!.amount_remaining],
    [advance!.id, '2026-02-15T10:00:00.000Z', 3000],
  );
  assert.equal(await issueRenewalInvoices.run(app.deps), 0, 'renewed once');
});

test('an overpayment becomes credit and the next renewal applies it (amount_due lowered, applied_balance set)', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const sub = await activeSubscription(app, 7000);
  assert.deepEqual(await balances(app, sub.customer_id), { NGN: 2000 });
  const [first] = await invoicesOf(app, sub.id);
  assert.deepEqual([first!.amount_paid, first!.status], [5000, 'paid'], 'an invoice takes no more than it owes');
  app.clock.set(new Date('2026-02-15T10:00:00.000Z'));
  // What the renewal will be, composed now and stored nowhere.
  const preview = await previewInvoice(app.deps.db, sub.id);
  const invoicesBefore = (await invoicesOf(app, sub.id)).length;
  await runWorker(app.deps);
  const renewal = (await invoicesOf(app, sub.id))[1]!;
  assert.equal(invoicesBefore, 1, 'the preview stored nothing');
  assert.deepEqual(
    [renewal.total, renewal.applied_balance, renewal.amount_due, renewal.status],
    [5000, 2000, 3000, 'open'],
  );
  assert.deepEqual(
    {
      lines: preview.lines,
      total: preview.total,
      applied_balance: preview.applied_balance,
      amount_due: preview.amount_due,
      period: [preview.period_start, preview.period_end],
    },
    {
      lines: renewal.lines.map(({ id: _id, ...line }) => line),
      total: renewal.total,
      applied_balance: renewal.applied_balance,
      amount_due: renewal.amount_due,
      period: [renewal.period_start, renewal.period_end],
    },
    'what the preview showed is what was issued',
  );
  assert.deepEqual(await balances(app, sub.customer_id), {}, 'the credit was used');
  const ledger = await app.deps.db
    .selectFrom('customer_balance_transactions')
    .select(['kind', 'amount', 'invoice_id', 'currency'])
    .where('customer_id', '=', sub.customer_id)
    .orderBy('id')
    .execute();
  assert.deepEqual(
    ledger.map((row) => ({ ...row, amount: Number(row.amount) })),
    [
      { kind: 'overpayment', amount: 2000, invoice_id: first!.id, currency: 'NGN' },
      { kind: 'applied_to_invoice', amount: -2000, invoice_id: renewal.id, currency: 'NGN' },
    ],
  );
  // The renewal is settled by what remains.
  await reportPayment(app, { subscriptionId: sub.id, amount: 3000 });
  assert.equal((await invoicesOf(app, sub.id))[1]!.status, 'paid');
});

test('credit that covers a renewal pays it when issued: the subscription renews, a trial becomes active', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  // 17000 on a 5000 invoice: 12000 credit, more than two renewals.
  const sub = await activeSubscription(app, 17000);
  app.clock.set(new Date('2026-02-15T10:00:00.000Z'));
  await runWorker(app.deps);
  const renewal = (await invoicesOf(app, sub.id))[1]!;
  assert.deepEqual([renewal.status, renewal.applied_balance, renewal.amount_due], ['paid', 5000, 0]);
  assert.deepEqual(await balances(app, sub.customer_id), { NGN: 7000 });
  const renewed = await app.request('GET', '/api/events?topic=subscription.renewed&limit=1');
  assert.equal(renewed.body.data[0].data.current_period_end, '2026-03-15T10:00:00.000Z');

  // Another subscription of the same customer: its trial ends on a first invoice the credit pays.
  const trial = await createSubscription(app, { customerId: sub.customer_id, trialPeriodDays: 3 });
  app.clock.set(new Date(trial.trial_end));
  await runWorker(app.deps);
  const [trialInvoice] = await invoicesOf(app, trial.id);
  assert.deepEqual([trialInvoice!.status, trialInvoice!.applied_balance, trialInvoice!.amount_due], ['paid', 5000, 0]);
  const active = await subscription(app, trial.id);
  assert.equal(active.status, 'active');
  assert.deepEqual(
    [active.current_period_start, active.current_period_end],
    [trial.trial_end, '2026-03-18T10:00:00.000Z'],
  );
  assert.deepEqual(await balances(app, sub.customer_id), { NGN: 2000 });
});

test('two invoices issued at once for one customer never spend the same credit', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const customer = await createCustomer(app);
  const plan = await createPlan(app);
  const first = await createSubscription(app, { customerId: customer.id, planId: plan.id });
  const second = await createSubscription(app, { customerId: customer.id, planId: plan.id });
  // Both first invoices: one paid with 9000 (4000 credit), the other exactly.
  await reportPayment(app, { subscriptionId: first.id, amount: 9000 });
  await reportPayment(app, { subscriptionId: second.id, amount: 5000 });
  assert.deepEqual(await balances(app, customer.id), { NGN: 4000 });
  // Two payments in advance at once, 1000 each: each issues its next invoice, which takes the
  // credit it finds. Whichever goes first takes all 4000 and owes 1000; the other finds none.
  const answers = await Promise.all(
    [first, second].map((sub) => reportPayment(app, { subscriptionId: sub.id, amount: 1000 })),
  );
  assert.deepEqual(
    answers.map((a) => a.status),
    [200, 200],
  );
  const advances = [(await invoicesOf(app, first.id))[1]!, (await invoicesOf(app, second.id))[1]!];
  assert.deepEqual(advances.map((invoice) => invoice.applied_balance).sort(), [0, 4000], 'the credit was taken once');
  assert.deepEqual(advances.map((invoice) => invoice.status).sort(), ['open', 'paid']);
  assert.deepEqual(await balances(app, customer.id), {}, 'never below zero');
  if (ON_POSTGRES) t.diagnostic('two concurrent transactions on PostgreSQL');
});
