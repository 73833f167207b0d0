import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, connectSecondInstance, type TestApp } from '../../../test/helpers/app.ts';
import { createSubscription } from '../../../test/helpers/factories.ts';
import { periodInvoiceInput } from '../../billing/compose/input.ts';
import { composeInvoice } from '../../billing/compose/pipeline.ts';
import type { Deps } from '../../deps.ts';
import { findPlan } from '../plans/plans.service.ts';
import { lockSubscription } from '../subscriptions/subscriptions.lifecycle.ts';
import type { InvoiceContent } from './invoices.schemas.ts';
import { INVOICE_STATUSES, INVOICE_TRANSITIONS, nextInvoiceStatus } from './invoices.status.ts';
import { ForbiddenInvoiceTransitionError, issueInvoice, lockInvoice, transitionInvoice } from './invoices.lifecycle.ts';

const ON_POSTGRES = Boolean(process.env.TEST_DATABASE_URL);

/** Issues the invoice of subscription `id` for the period starting at `start` (one month), as a worker would. */
function issue(deps: Deps, id: string, start: string, end = '2026-02-15T10:00:00.000Z') {
  return deps.db.transaction().execute(async (trx) => {
    const subscription = await lockSubscription(trx, id);
    const plan = (await findPlan(trx, subscription.plan_id))!;
    return issueInvoice(trx, deps, {
      customerId: subscription.customer_id,
      subscriptionId: subscription.id,
      billingReason: 'subscription_cycle',
      currency: plan.currency,
      periodStart: start,
      periodEnd: end,
      dueAt: start,
      content: composeInvoice(
        periodInvoiceInput({
          reason: 'renewal',
          customerId: subscription.customer_id,
          subscriptionId: subscription.id,
          plan: plan,
          periodStart: start,
          periodEnd: end,
        }),
      ),
    });
  });
}

async function invoiceEvents(app: TestApp): Promise<{ topic: string; data: { id: string; number: string } }[]> {
  const res = await app.request('GET', '/api/events?limit=100&sort_order=asc');
  return res.body.data.filter((e: { topic: string }) => e.topic.startsWith('invoice.'));
}

test('the transition table: draft → open | void; open → paid | void | uncollectible; uncollectible → paid | void; paid and void are final', () => {
  const moves = INVOICE_STATUSES.flatMap((from) =>
    (['finalize', 'paid', 'void', 'mark_uncollectible'] as const)
      .filter((event) => nextInvoiceStatus(from, event))
      .map((event) => `${from}:${event}→${INVOICE_TRANSITIONS[from][event]!.to}`),
  );
  assert.deepEqual(moves, [
    'draft:finalize→open',
    'draft:void→void',
    'open:paid→paid',
    'open:void→void',
    'open:mark_uncollectible→uncollectible',
    'uncollectible:paid→paid',
    'uncollectible:void→void',
  ]);
});

// Trialing subscriptions: no invoice of their own until the trial ends (SPEC §9), so the numbers start at 1 here.
test('an invoice is issued once per (subscription, period), numbered INV-000001, INV-000002 without gaps', async (t) => {
  const app = await buildTestApp(t);
  const sub = await createSubscription(app, {
    trialPeriodDays: 30,
    plan: { name: 'Pro', amount: 5000, currency: 'NGN' },
  });
  const first = await issue(app.deps, sub.id, '2026-01-15T10:00:00.000Z');
  assert.equal(first.created, true);
  assert.equal(first.invoice.number, 'INV-000001');
  assert.equal(first.invoice.status, 'open');
  assert.equal(first.invoice.amount_due, 5000);
  assert.equal(first.invoice.amount_remaining, 5000);
  assert.deepEqual(
    first.invoice.lines.map((line) => [line.description, line.amount, line.currency, line.quantity]),
    [['Pro × 1, 15 Jan 2026 – 15 Feb 2026', 5000, 'NGN', 1]],
  );
  assert.match(first.invoice.hosted_invoice_url!, /^http:\/\/127\.0\.0\.1:\d+\/i\/[A-Za-z0-9_-]{43}$/);
  const again = await issue(app.deps, sub.id, '2026-01-15T10:00:00.000Z');
  assert.equal(again.created, false);
  assert.equal(again.invoice.id, first.invoice.id);

  // A transaction that rolls back after taking a number gives it back.
  await assert.rejects(
    app.deps.db.transaction().execute(async (trx) => {
      const subscription = await lockSubscription(trx, sub.id);
      const plan = (await findPlan(trx, subscription.plan_id))!;
      await issueInvoice(trx, app.deps, {
        customerId: subscription.customer_id,
        subscriptionId: subscription.id,
        billingReason: 'subscription_cycle',
        currency: plan.currency,
        periodStart: '2026-02-15T10:00:00.000Z',
        periodEnd: '2026-03-15T10:00:00.000Z',
        dueAt: '2026-02-15T10:00:00.000Z',
        content: composeInvoice(
          periodInvoiceInput({
            reason: 'renewal',
            customerId: subscription.customer_id,
            subscriptionId: subscription.id,
            plan: plan,
            periodStart: '2026-02-15T10:00:00.000Z',
            periodEnd: '2026-03-15T10:00:00.000Z',
          }),
        ),
      });
      throw new Error('crash after issuing');
    }),
    /crash after issuing/,
  );
  const second = await issue(app.deps, sub.id, '2026-02-15T10:00:00.000Z', '2026-03-15T10:00:00.000Z');
  assert.equal(second.invoice.number, 'INV-000002');
  assert.deepEqual(
    (await invoiceEvents(app)).map((e) => [e.topic, e.data.number]),
    [
      ['invoice.created', 'INV-000001'],
      ['invoice.created', 'INV-000002'],
    ],
  );
});

test('an invoice owing nothing is paid when issued; transitions stamp their time and refuse final states', async (t) => {
  const app = await buildTestApp(t, { env: { INVOICE_PREFIX: 'ACME' } });
  const free = await createSubscription(app, { trialPeriodDays: 30, plan: { amount: 0 } });
  const { invoice } = await issue(app.deps, free.id, '2026-01-15T10:00:00.000Z');
  assert.equal(invoice.number, 'ACME-000001');
  assert.equal(invoice.status, 'paid');
  assert.equal(invoice.paid_at, '2026-01-15T10:00:00.000Z');
  assert.deepEqual(
    (await invoiceEvents(app)).map((e) => e.topic),
    ['invoice.created', 'invoice.paid'],
  );
  await assert.rejects(
    app.deps.db
      .transaction()
      .execute(async (trx) => transitionInvoice(trx, app.deps, await lockInvoice(trx, invoice.id), 'void')),
    ForbiddenInvoiceTransitionError,
  );
  const owed = await createSubscription(app, { trialPeriodDays: 30 });
  const open = (await issue(app.deps, owed.id, '2026-01-15T10:00:00.000Z')).invoice;
  app.clock.advance(60_000);
  const voided = await app.deps.db
    .transaction()
    .execute(async (trx) => transitionInvoice(trx, app.deps, await lockInvoice(trx, open.id), 'void'));
  assert.equal(voided.status, 'void');
  assert.equal(voided.voided_at, '2026-01-15T10:01:00.000Z');
  assert.equal(voided.updated_at, '2026-01-15T10:01:00.000Z');
});

test('content that does not add up is refused before anything is written: no invoice, no number taken', async (t) => {
  const app = await buildTestApp(t);
  const sub = await createSubscription(app, { trialPeriodDays: 30, plan: { name: 'Pro', amount: 5000 } });
  const start = '2026-01-15T10:00:00.000Z';
  const end = '2026-02-15T10:00:00.000Z';
  const attempt = (change: (content: InvoiceContent) => InvoiceContent) =>
    app.deps.db.transaction().execute(async (trx) => {
      const subscription = await lockSubscription(trx, sub.id);
      const plan = (await findPlan(trx, subscription.plan_id))!;
      const input = periodInvoiceInput({
        reason: 'renewal',
        customerId: subscription.customer_id,
        subscriptionId: subscription.id,
        plan,
        periodStart: start,
        periodEnd: end,
      });
      return issueInvoice(trx, app.deps, {
        customerId: subscription.customer_id,
        subscriptionId: subscription.id,
        billingReason: 'subscription_cycle',
        currency: plan.currency,
        periodStart: start,
        periodEnd: end,
        dueAt: start,
        content: change(composeInvoice(input)),
      });
    });
  for (const change of [
    (c: InvoiceContent) => ({ ...c, total: c.total + 1 }),
    (c: InvoiceContent) => ({ ...c, amount_due: c.amount_due - 1 }),
    (c: InvoiceContent) => ({ ...c, applied_balance: c.total + 1, amount_due: -1 }),
    (c: InvoiceContent) => ({ ...c, lines: c.lines.map((line) => ({ ...line, currency: 'USD' })) }),
  ]) {
    await assert.rejects(attempt(change), /invoice content does not add up/);
  }
  assert.equal((await app.request('GET', `/api/invoices?subscription_id=${sub.id}`)).body.meta.total, 0);
  assert.equal((await attempt((c) => c)).invoice.number, 'INV-000001');
});

test(
  'two instances issuing the same period at once make one invoice and one number (PostgreSQL)',
  { skip: !ON_POSTGRES },
  async (t) => {
    const app = await buildTestApp(t);
    const other = await connectSecondInstance(app);
    t.after(() => other.close());
    const subs = [
      await createSubscription(app, { trialPeriodDays: 30 }),
      await createSubscription(app, { trialPeriodDays: 30 }),
    ];
    const results = await Promise.all(
      subs.flatMap((sub) => [
        issue(app.deps, sub.id, '2026-01-15T10:00:00.000Z'),
        issue(other, sub.id, '2026-01-15T10:00:00.000Z'),
      ]),
    );
    assert.deepEqual(results.map((r) => r.created).filter(Boolean).length, 2);
    const numbers = new Set(results.map((r) => r.invoice.number));
    assert.deepEqual([...numbers].sort(), ['INV-000001', 'INV-000002']);
  },
);
