// Invoices on the money path (SPEC §9): issued at creation and at renewal, settled by
// provider payments (full, partial, several, named by metadata, in the wrong currency),
// failures counted, dunning per invoice. Both databases (TEST_DATABASE_URL adds PostgreSQL).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, connectSecondInstance, type TestApp } from '../../test/helpers/app.ts';
import { ON_POSTGRES } from '../../test/helpers/database.ts';
import { createCustomer, createPlan, createSubscription } from '../../test/helpers/factories.ts';
import { FakePaystack } from '../../test/helpers/fake-paystack.ts';
import {
  invoiceById,
  invoiceEvents,
  invoicesOf,
  paymentByReference,
  reportPayment,
  runWorker,
} from '../../test/helpers/invoice-payments.ts';
import { PROVIDER_ENV } from '../../test/helpers/provider-events.ts';
import { periodInvoiceInput } from './compose/input.ts';
import { composeInvoice } from './compose/pipeline.ts';
import { findPlan } from '../modules/plans/plans.service.ts';
import { lockSubscription } from '../modules/subscriptions/subscriptions.lifecycle.ts';
import { issueRenewalInvoices } from '../worker/subscriptions.jobs.ts';
import { issueInvoice } from '../modules/invoices/invoices.lifecycle.ts';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

async function subscription(app: TestApp, id: string) {
  return (await app.request('GET', `/api/subscriptions/${id}`)).body;
}

async function openCase(app: TestApp, subscriptionId: string) {
  return app.deps.db
    .selectFrom('dunning_cases')
    .selectAll()
    .where('subscription_id', '=', subscriptionId)
    .where('status', '=', 'open')
    .executeTakeFirst();
}

/** An active subscription (plan 5000 NGN monthly): created, its first invoice paid in full. */
async function activeSubscription(app: TestApp) {
  const sub = await createSubscription(app);
  const [first] = await invoicesOf(app, sub.id);
  assert.equal((await reportPayment(app, { subscriptionId: sub.id, amount: 5000 })).status, 200);
  assert.equal((await invoiceById(app, first!.id)).status, 'paid');
  return subscription(app, sub.id);
}

test('an incomplete subscription gets its first invoice at creation: the plan price for [created_at, +interval], due at once', async (t) => {
  const app = await buildTestApp(t);
  const sub = await createSubscription(app, { plan: { name: 'Pro', amount: 5000, currency: 'NGN' } });
  const invoices = await invoicesOf(app, sub.id);
  assert.equal(invoices.length, 1);
  const [invoice] = invoices;
  assert.deepEqual(
    {
      number: invoice!.number,
      status: invoice!.status,
      customer_id: invoice!.customer_id,
      currency: invoice!.currency,
      subtotal: invoice!.subtotal,
      total_discount: invoice!.total_discount,
      total_tax: invoice!.total_tax,
      total: invoice!.total,
      applied_balance: invoice!.applied_balance,
      amount_due: invoice!.amount_due,
      amount_paid: invoice!.amount_paid,
      amount_remaining: invoice!.amount_remaining,
      period_start: invoice!.period_start,
      period_end: invoice!.period_end,
      due_at: invoice!.due_at,
      attempt_count: invoice!.attempt_count,
    },
    {
      number: 'INV-000001',
      status: 'open',
      customer_id: sub.customer_id,
      currency: 'NGN',
      subtotal: 5000,
      total_discount: 0,
      total_tax: 0,
      total: 5000,
      applied_balance: 0,
      amount_due: 5000,
      amount_paid: 0,
      amount_remaining: 5000,
      period_start: sub.created_at,
      period_end: '2026-02-15T10:00:00.000Z',
      due_at: sub.created_at,
      attempt_count: 0,
    },
  );
  // Composed by the pipeline (SPEC §12): one subscription line, the plan's price × 1.
  assert.deepEqual(
    invoice!.lines.map((line) => [
      line.kind,
      line.description,
      line.amount,
      line.unit_amount,
      line.quantity,
      line.proration,
    ]),
    [['subscription', 'Pro × 1, 15 Jan 2026 – 15 Feb 2026', 5000, 5000, 1, false]],
  );
  assert.match(invoice!.lines[0]!.id, /^il_[0-9A-HJKMNP-TV-Z]{26}$/);
  assert.deepEqual(
    (await invoiceEvents(app)).map((e) => [e.topic, e.id]),
    [['invoice.created', invoice!.id]],
  );
});

test('a trial has no invoice until it ends; at trial end the worker issues [trial_end, +interval], due at trial_end', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const sub = await createSubscription(app, { trialPeriodDays: 14 });
  assert.deepEqual(await invoicesOf(app, sub.id), []);
  app.clock.set(new Date(Date.parse(sub.trial_end) - 1));
  await runWorker(app.deps);
  assert.deepEqual(await invoicesOf(app, sub.id), []);
  app.clock.advance(1);
  assert.equal((await runWorker(app.deps)).issue_renewal_invoices, 1);
  const [invoice] = await invoicesOf(app, sub.id);
  assert.equal(invoice!.period_start, sub.trial_end);
  assert.equal(invoice!.period_end, '2026-02-28T10:00:00.000Z');
  assert.equal(invoice!.due_at, sub.trial_end);
  assert.equal(invoice!.status, 'open');
  // Paying it ends the trial.
  await reportPayment(app, { subscriptionId: sub.id, amount: 5000 });
  assert.equal((await invoiceById(app, invoice!.id)).status, 'paid');
  assert.equal((await subscription(app, sub.id)).status, 'active');
  assert.equal((await runWorker(app.deps)).issue_renewal_invoices, 0);
});

test('at current_period_end the worker issues the renewal invoice once; past RENEWAL_GRACE unpaid the subscription is past_due with a case for it', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const sub = await activeSubscription(app);
  assert.equal(sub.current_period_end, '2026-02-15T10:00:00.000Z');
  app.clock.set(new Date(Date.parse(sub.current_period_end) - 1));
  assert.equal((await runWorker(app.deps)).issue_renewal_invoices, 0);
  app.clock.advance(1);
  assert.equal((await runWorker(app.deps)).issue_renewal_invoices, 1);
  assert.equal((await runWorker(app.deps)).issue_renewal_invoices, 0);
  const [, renewal] = await invoicesOf(app, sub.id);
  assert.equal(renewal!.number, 'INV-000002');
  assert.equal(renewal!.period_start, '2026-02-15T10:00:00.000Z');
  assert.equal(renewal!.period_end, '2026-03-15T10:00:00.000Z');
  assert.equal(renewal!.due_at, '2026-02-15T10:00:00.000Z');
  assert.deepEqual(
    renewal!.lines.map((line) => [line.kind, line.description, line.amount]),
    [['subscription', 'Pro monthly × 1, 15 Feb 2026 – 15 Mar 2026', 5000]],
  );
  assert.deepEqual([renewal!.subtotal, renewal!.total, renewal!.amount_due], [5000, 5000, 5000]);
  assert.equal((await subscription(app, sub.id)).status, 'active');

  app.clock.advance(HOUR - 1);
  assert.equal((await runWorker(app.deps)).mark_unpaid_renewals_past_due, 0);
  app.clock.advance(1);
  assert.equal((await runWorker(app.deps)).mark_unpaid_renewals_past_due, 1);
  assert.equal((await subscription(app, sub.id)).status, 'past_due');
  const dunning = await openCase(app, sub.id);
  assert.equal(dunning?.invoice_id, renewal!.id);
  assert.equal(Number(dunning?.amount_due), 5000);
  assert.equal(dunning?.reason, 'renewal_unpaid');
  const shown = await app.request('GET', `/api/dunning/cases/${dunning!.id}`);
  assert.equal(shown.body.invoice_id, renewal!.id);

  // Every invoice event exactly once.
  assert.deepEqual(
    (await invoiceEvents(app)).map((e) => e.topic),
    ['invoice.created', 'invoice.paid', 'invoice.created'],
  );
});

test('a partial payment leaves the invoice open and the subscription as it was; the second completes it (paid, once), the overpayment stays on the payment', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const sub = await createSubscription(app);
  const [invoice] = await invoicesOf(app, sub.id);
  const first = await reportPayment(app, { subscriptionId: sub.id, amount: 2000 });
  let after = await invoiceById(app, invoice!.id);
  assert.equal(after.status, 'open');
  assert.equal(after.amount_paid, 2000);
  assert.equal(after.amount_remaining, 3000);
  assert.equal((await subscription(app, sub.id)).status, 'incomplete');
  assert.equal((await paymentByReference(app, first.reference)).invoice_id, invoice!.id);

  const second = await reportPayment(app, { subscriptionId: sub.id, amount: 4000 });
  after = await invoiceById(app, invoice!.id);
  assert.equal(after.status, 'paid');
  assert.equal(after.amount_paid, 5000);
  assert.equal(after.amount_remaining, 0);
  assert.ok(after.paid_at);
  const payment = (await app.request('GET', `/api/payments/${(await paymentByReference(app, second.reference)).id}`))
    .body;
  assert.equal(payment.invoice_id, invoice!.id);
  assert.equal(payment.amount, 4000); // 1000 of it unapplied: 2000 + 4000 − amount_paid 5000
  const active = await subscription(app, sub.id);
  assert.equal(active.status, 'active');
  assert.deepEqual(
    (await invoiceEvents(app)).map((e) => [e.topic, e.status, e.amount_paid]),
    [
      ['invoice.created', 'open', 0],
      ['invoice.paid', 'paid', 5000],
    ],
  );
});

test('a full payment of an open invoice pays it and moves the subscription once; a refund does not reopen it', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const sub = await createSubscription(app);
  const [invoice] = await invoicesOf(app, sub.id);
  const { reference } = await reportPayment(app, { subscriptionId: sub.id, amount: 5000 });
  assert.equal((await invoiceById(app, invoice!.id)).status, 'paid');
  assert.equal((await subscription(app, sub.id)).status, 'active');
  const refund = {
    event: 'refund.processed',
    data: {
      status: 'processed',
      transaction_reference: reference,
      refund_reference: `RF_${reference}`,
      amount: '5000',
      currency: 'NGN',
      processor: 'paystack',
      customer: { email: 'someone@example.com' },
      integration: 1,
      domain: 'test',
    },
  };
  const { postPaystack } = await import('../../test/helpers/provider-events.ts');
  assert.equal((await postPaystack(app, refund)).status, 200);
  assert.equal((await paymentByReference(app, reference)).status, 'refunded');
  const after = await invoiceById(app, invoice!.id);
  assert.equal(after.status, 'paid');
  assert.equal(after.amount_paid, 5000);
});

/** Issues a second open invoice for `sub` (another period), as a renewal would, and returns it. */
async function secondInvoice(app: TestApp, subscriptionId: string, start = '2026-03-01T00:00:00.000Z') {
  return app.deps.db.transaction().execute(async (trx) => {
    const row = await lockSubscription(trx, subscriptionId);
    const plan = (await findPlan(trx, row.plan_id))!;
    const end = '2026-04-01T00:00:00.000Z';
    const { invoice } = await issueInvoice(trx, app.deps, {
      customerId: row.customer_id,
      subscriptionId: row.id,
      billingReason: 'subscription_cycle',
      currency: plan.currency,
      periodStart: start,
      periodEnd: end,
      dueAt: start,
      content: composeInvoice(
        periodInvoiceInput({
          reason: 'renewal',
          customerId: row.customer_id,
          subscriptionId: row.id,
          plan: plan,
          periodStart: start,
          periodEnd: end,
        }),
      ),
    });
    return invoice;
  });
}

test('metadata invoice_id wins when it names a payable invoice of the subscription; otherwise the oldest open one is settled', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const sub = await createSubscription(app);
  const other = await createSubscription(app);
  const [oldest] = await invoicesOf(app, sub.id);
  const newer = await secondInvoice(app, sub.id);
  const [othersInvoice] = await invoicesOf(app, other.id);

  await reportPayment(app, { subscriptionId: sub.id, amount: 5000, invoiceId: newer.id });
  assert.equal((await invoiceById(app, newer.id)).status, 'paid');
  assert.equal((await invoiceById(app, oldest!.id)).status, 'open');

  // Another subscription's invoice, a malformed id, and a paid invoice are not this payment's: the oldest open one is.
  await reportPayment(app, { subscriptionId: sub.id, amount: 1000, invoiceId: othersInvoice!.id });
  await reportPayment(app, { subscriptionId: sub.id, amount: 1000, invoiceId: 'inv_nope' });
  await reportPayment(app, { subscriptionId: sub.id, amount: 1000, invoiceId: newer.id });
  assert.equal((await invoiceById(app, oldest!.id)).amount_paid, 3000);
  assert.equal((await invoiceById(app, othersInvoice!.id)).amount_paid, 0);
  assert.equal((await invoiceById(app, newer.id)).amount_paid, 5000);
});

test('a payment in another currency than the invoice settles nothing and moves nothing; it is recorded on the customer', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const sub = await createSubscription(app);
  const [invoice] = await invoicesOf(app, sub.id);
  const { status, reference } = await reportPayment(app, { subscriptionId: sub.id, amount: 5000, currency: 'USD' });
  assert.equal(status, 200);
  const payment = await paymentByReference(app, reference);
  assert.equal(payment.status, 'succeeded');
  assert.equal(payment.customer_id, sub.customer_id);
  assert.equal(payment.invoice_id, null);
  assert.deepEqual(await invoiceById(app, invoice!.id), invoice);
  assert.equal((await subscription(app, sub.id)).status, 'incomplete');
  const listed = await app.request('GET', `/api/payments?customer_id=${sub.customer_id}`);
  assert.equal(listed.body.meta.total, 1);
});

test('a payment naming a void invoice is recorded and settles nothing', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const sub = await createSubscription(app);
  const [invoice] = await invoicesOf(app, sub.id);
  const { transitionInvoice, lockInvoice } = await import('../modules/invoices/invoices.lifecycle.ts');
  await app.deps.db
    .transaction()
    .execute(async (trx) => transitionInvoice(trx, app.deps, await lockInvoice(trx, invoice!.id), 'void'));
  const { reference } = await reportPayment(app, { subscriptionId: sub.id, amount: 5000, invoiceId: invoice!.id });
  const payment = await paymentByReference(app, reference);
  assert.equal(payment.status, 'succeeded');
  assert.equal(payment.invoice_id, null);
  const after = await invoiceById(app, invoice!.id);
  assert.equal(after.status, 'void');
  assert.equal(after.amount_paid, 0);
  assert.equal((await subscription(app, sub.id)).status, 'incomplete');
});

test("with nothing owed a payment pays the next period's invoice in advance, on the anchor; what it leaves over is credit the next invoice takes", async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const sub = await createSubscription(app, { trialPeriodDays: 14 });
  const { reference } = await reportPayment(app, { subscriptionId: sub.id, amount: 7000 });
  const after = await subscription(app, sub.id);
  assert.equal(after.status, 'active');
  // The subscription's period is not the payment's to move (SPEC §12): still the trial.
  assert.deepEqual([after.current_period_start, after.current_period_end], [sub.current_period_start, sub.trial_end]);
  const [invoice] = await invoicesOf(app, sub.id);
  assert.deepEqual(
    [invoice!.status, invoice!.amount_due, invoice!.amount_paid, invoice!.period_start, invoice!.due_at],
    ['paid', 5000, 5000, sub.trial_end, sub.trial_end],
  );
  assert.equal(invoice!.period_end, '2026-02-28T10:00:00.000Z');
  assert.equal((await paymentByReference(app, reference)).invoice_id, invoice!.id);
  assert.deepEqual(
    (await invoiceEvents(app)).map((e) => e.topic),
    ['invoice.created', 'invoice.paid'],
  );
  const customer = async () => (await app.request('GET', `/api/customers/${sub.customer_id}`)).body;
  assert.deepEqual((await customer()).balances, { NGN: 2000 }, 'the 2000 it overpaid is credit');
  // The next payment pays the period after, which takes the credit first.
  await reportPayment(app, { subscriptionId: sub.id, amount: 5000 });
  const [, second] = await invoicesOf(app, sub.id);
  assert.deepEqual(
    [second!.period_start, second!.period_end, second!.status],
    // The anchor is the 29th: February clamps to the 28th, March is the 29th again.
    ['2026-02-28T10:00:00.000Z', '2026-03-29T10:00:00.000Z', 'paid'],
  );
  assert.deepEqual(
    [second!.total, second!.applied_balance, second!.amount_due, second!.amount_paid],
    [5000, 2000, 3000, 3000],
  );
  assert.deepEqual((await customer()).balances, { NGN: 2000 }, '2000 taken, 2000 left over again');
  // A payment below what is due leaves that period's invoice open (no period is bought at a discount).
  await reportPayment(app, { subscriptionId: sub.id, amount: 1000 });
  const [, , third] = await invoicesOf(app, sub.id);
  assert.deepEqual(
    [third!.status, third!.total, third!.applied_balance, third!.amount_due, third!.amount_paid],
    ['open', 5000, 2000, 3000, 1000],
  );
  assert.deepEqual(
    third!.lines.map((line) => [line.kind, line.amount, line.unit_amount, line.quantity]),
    [['subscription', 5000, 5000, 1]],
  );
  assert.deepEqual((await customer()).balances, {}, 'no credit left: only non-zero balances show');
  // The next payment settles it (the oldest payable invoice) and its surplus is credit.
  await reportPayment(app, { subscriptionId: sub.id, amount: 2500 });
  assert.equal((await invoiceById(app, third!.id)).status, 'paid');
  assert.equal((await invoicesOf(app, sub.id)).length, 3);
  assert.deepEqual((await customer()).balances, { NGN: 500 });
});

test('failed payments count attempts on the invoice (invoice.payment_failed each); the dunning case is for that invoice and recovers when it is paid, not before', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const incomplete = await createSubscription(app);
  await reportPayment(app, { subscriptionId: incomplete.id, amount: 5000, failed: true });
  await reportPayment(app, { subscriptionId: incomplete.id, amount: 5000, failed: true });
  const [first] = await invoicesOf(app, incomplete.id);
  assert.equal(first!.attempt_count, 2);
  assert.equal(first!.status, 'open');

  const sub = await activeSubscription(app);
  app.clock.set(new Date(sub.current_period_end));
  await runWorker(app.deps);
  const renewal = (await invoicesOf(app, sub.id))[1]!;
  await reportPayment(app, { subscriptionId: sub.id, amount: 5000, failed: true });
  assert.equal((await invoiceById(app, renewal.id)).attempt_count, 1);
  assert.equal((await subscription(app, sub.id)).status, 'past_due');
  const dunning = await openCase(app, sub.id);
  assert.equal(dunning?.invoice_id, renewal.id);
  assert.equal(Number(dunning?.amount_due), 5000);

  await reportPayment(app, { subscriptionId: sub.id, amount: 3000 });
  assert.equal((await subscription(app, sub.id)).status, 'past_due');
  assert.ok(await openCase(app, sub.id), 'a partial payment recovers nothing');
  await reportPayment(app, { subscriptionId: sub.id, amount: 2000 });
  assert.equal((await invoiceById(app, renewal.id)).status, 'paid');
  assert.equal((await subscription(app, sub.id)).status, 'active');
  assert.equal(await openCase(app, sub.id), undefined);
  const recovered = await app.deps.db
    .selectFrom('dunning_cases')
    .selectAll()
    .where('id', '=', dunning!.id)
    .executeTakeFirstOrThrow();
  assert.equal(recovered.status, 'recovered');

  const failedEvents = (await invoiceEvents(app)).filter((e) => e.topic === 'invoice.payment_failed');
  assert.deepEqual(
    failedEvents.map((e) => e.id),
    [first!.id, first!.id, renewal.id],
  );
});

test('dunning exhausted with the final action cancel marks its invoice uncollectible (once); a later payment still settles it, the subscription stays cancelled', async (t) => {
  // The first payment saved the card, so each step charges it first (SPEC §10): Paystack declines.
  const paystack = await FakePaystack.start(t);
  paystack.defaultChargeOutcome = 'insufficient_funds';
  const app = await buildTestApp(t, {
    env: { ...PROVIDER_ENV, PAYSTACK_API_URL: paystack.url, DUNNING_SCHEDULE: '1d,2d' },
  });
  const sub = await activeSubscription(app);
  app.clock.set(new Date(Date.parse(sub.current_period_end) + HOUR));
  await runWorker(app.deps);
  assert.equal((await subscription(app, sub.id)).status, 'past_due');
  const renewal = (await invoicesOf(app, sub.id))[1]!;
  for (let day = 0; day < 3; day++) {
    app.clock.advance(DAY);
    await runWorker(app.deps);
  }
  assert.equal((await subscription(app, sub.id)).status, 'cancelled');
  assert.equal((await invoiceById(app, renewal.id)).status, 'uncollectible');
  app.clock.advance(DAY);
  await runWorker(app.deps);
  assert.equal((await invoiceEvents(app)).filter((e) => e.topic === 'invoice.marked_uncollectible').length, 1);

  await reportPayment(app, { subscriptionId: sub.id, amount: 5000 });
  const paid = await invoiceById(app, renewal.id);
  assert.equal(paid.status, 'paid');
  assert.equal(paid.amount_paid, 5000);
  assert.equal((await subscription(app, sub.id)).status, 'cancelled');
});

test('DUNNING_FINAL_ACTION=unpaid leaves the invoice open', async (t) => {
  const app = await buildTestApp(t, {
    env: { ...PROVIDER_ENV, DUNNING_SCHEDULE: '1d', DUNNING_FINAL_ACTION: 'unpaid' },
  });
  const sub = await activeSubscription(app);
  app.clock.set(new Date(Date.parse(sub.current_period_end) + HOUR));
  await runWorker(app.deps);
  for (let day = 0; day < 3; day++) {
    app.clock.advance(DAY);
    await runWorker(app.deps);
  }
  assert.equal((await subscription(app, sub.id)).status, 'unpaid');
  assert.equal((await invoicesOf(app, sub.id))[1]!.status, 'open');
});

test(
  'two workers on two connections at one renewal issue each invoice once (PostgreSQL)',
  { skip: !ON_POSTGRES && 'PostgreSQL only: SQLite in memory cannot be opened by a second handle' },
  async (t) => {
    const app = await buildTestApp(t, { env: PROVIDER_ENV });
    const second = await connectSecondInstance(app);
    try {
      const customer = await createCustomer(app);
      const plan = await createPlan(app);
      const ids: string[] = [];
      for (let i = 0; i < 30; i++) {
        const sub = await createSubscription(app, { customerId: customer.id, planId: plan.id });
        await reportPayment(app, { subscriptionId: sub.id, amount: 5000 });
        ids.push(sub.id);
      }
      app.clock.advance(31 * DAY);
      const [a, b] = await Promise.all([runWorker(app.deps), runWorker(second)]);
      assert.equal((a.issue_renewal_invoices ?? 0) + (b.issue_renewal_invoices ?? 0), 30);
      for (const id of ids) {
        const invoices = await invoicesOf(app, id);
        assert.equal(invoices.length, 2, id);
        // The renewal moved the subscription into the period it invoiced.
        const renewed = await subscription(app, id);
        assert.deepEqual(
          [invoices[1]!.period_start, invoices[1]!.period_end],
          [renewed.current_period_start, renewed.current_period_end],
          id,
        );
      }
      const created = (await invoiceEvents(app)).filter((e) => e.topic === 'invoice.created');
      assert.equal(created.length, 60);
      assert.equal(new Set(created.map((e) => e.id)).size, 60);
      const numbers = await app.deps.db.selectFrom('invoices').select('number').orderBy('number').execute();
      assert.deepEqual(
        numbers.map((row) => row.number),
        Array.from({ length: 60 }, (_, i) => `INV-${String(i + 1).padStart(6, '0')}`),
      );
    } finally {
      await second.close();
    }
  },
);

test('an incomplete subscription that expires voids its unpaid first invoice first; a partly paid one stays open', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const unpaid = await createSubscription(app);
  const partly = await createSubscription(app);
  await reportPayment(app, { subscriptionId: partly.id, amount: 1000 });
  app.clock.advance(23 * HOUR); // SUBSCRIPTION_INCOMPLETE_TTL default
  assert.equal((await runWorker(app.deps)).expire_incomplete_subscriptions, 2);
  const [voided] = await invoicesOf(app, unpaid.id);
  assert.equal(voided!.status, 'void');
  assert.equal(voided!.voided_at, app.clock.now().toISOString());
  const [open] = await invoicesOf(app, partly.id);
  assert.equal(open!.status, 'open');
  assert.equal(open!.amount_paid, 1000);
  assert.equal((await subscription(app, unpaid.id)).status, 'incomplete_expired');
  assert.equal((await subscription(app, partly.id)).status, 'incomplete_expired');
  assert.deepEqual(
    (await invoiceEvents(app)).filter((e) => e.topic === 'invoice.voided').map((e) => e.id),
    [voided!.id],
  );
});

test('a renewal run that dies mid-batch leaves nothing behind; the next run issues each invoice once, numbered without gaps', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const customer = await createCustomer(app);
  const plan = await createPlan(app);
  const subs = [];
  for (let i = 0; i < 2; i++) {
    const sub = await createSubscription(app, { customerId: customer.id, planId: plan.id });
    await reportPayment(app, { subscriptionId: sub.id, amount: 5000 });
    subs.push(sub);
  }
  app.clock.advance(31 * DAY);
  // The worker's clock fails after the first invoice's reads: the whole batch rolls back.
  let reads = 0;
  const dying = {
    ...app.deps,
    clock: {
      now: () => {
        reads += 1;
        if (reads > 4) throw new Error('the worker died');
        return app.clock.now();
      },
    },
  };
  await assert.rejects(issueRenewalInvoices.run(dying), /the worker died/);
  for (const sub of subs) assert.equal((await invoicesOf(app, sub.id)).length, 1);
  assert.equal((await invoiceEvents(app)).filter((e) => e.topic === 'invoice.created').length, 2);

  assert.equal(await issueRenewalInvoices.run(app.deps), 2);
  assert.equal(await issueRenewalInvoices.run(app.deps), 0);
  const numbers = await app.deps.db.selectFrom('invoices').select('number').orderBy('number').execute();
  assert.deepEqual(
    numbers.map((row) => row.number),
    ['INV-000001', 'INV-000002', 'INV-000003', 'INV-000004'],
  );
  assert.equal((await invoiceEvents(app)).filter((e) => e.topic === 'invoice.created').length, 4);
});
