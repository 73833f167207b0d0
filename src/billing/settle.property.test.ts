// Settlement as a property (SPEC §9), on both databases: random provider reports — successes
// of random amounts, some in another currency, some naming an invoice, failures — for a few
// subscriptions with one or two open invoices, posted in random order and partly at once.
// Whatever happens: per invoice 0 ≤ amount_paid ≤ amount_due and amount_paid is what its
// payments brought, capped (min(amount_due, Σ their amounts)); paid exactly when nothing
// remains; one invoice per (subscription, period); every invoice event once per change; the
// payments' money is the invoices' amount_paid plus the credit they left over.
// INVOICE_PROPERTY_RUNS histories (default 25); INVOICE_PROPERTY_SEED=<seed> replays one.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import { createCustomer, createPlan } from '../../test/helpers/factories.ts';
import { invoicesOf, type ProviderPayment, reportPayment } from '../../test/helpers/invoice-payments.ts';
import { PROVIDER_ENV } from '../../test/helpers/provider-events.ts';
import { findPlan } from '../modules/plans/plans.service.ts';
import { lockSubscription } from '../modules/subscriptions/subscriptions.lifecycle.ts';
import { issueRenewalInvoice } from './issue.ts';

const RUNS = Number(process.env.INVOICE_PROPERTY_RUNS ?? 25);
const SEED = process.env.INVOICE_PROPERTY_SEED === undefined ? undefined : Number(process.env.INVOICE_PROPERTY_SEED);

interface PlannedReport {
  subscription: number;
  amount: number;
  currency: 'NGN' | 'USD';
  /** Which of the subscription's invoices the metadata names, if any. */
  names: 'none' | 'first' | 'second';
  failed: boolean;
}

const history = fc.record({
  /** Per subscription: does it get a second open invoice (another period) before the reports? */
  subscriptions: fc.array(fc.boolean(), { minLength: 1, maxLength: 3 }),
  reports: fc.array(
    fc.record({
      subscription: fc.nat({ max: 2 }),
      amount: fc.integer({ min: 1, max: 7000 }),
      currency: fc.constantFrom<'NGN' | 'USD'>('NGN', 'NGN', 'NGN', 'NGN', 'USD'),
      names: fc.constantFrom<PlannedReport['names']>('none', 'none', 'first', 'second'),
      failed: fc.constantFrom(false, false, false, true),
    }),
    { minLength: 1, maxLength: 10 },
  ),
  together: fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 1, maxLength: 5 }),
});

/** A second open invoice for the month after the first, issued as a renewal does (issue.ts). */
async function issueSecond(app: TestApp, subscriptionId: string, start: string) {
  await app.deps.db.transaction().execute(async (trx) => {
    const row = await lockSubscription(trx, subscriptionId);
    const plan = (await findPlan(trx, row.plan_id))!;
    const end = new Date(Date.parse(start) + 31 * 86_400_000);
    await issueRenewalInvoice(trx, app.deps, row, plan, { start: new Date(start), end }, null);
  });
}

test('settlement: whatever the reports and their order, each invoice holds what its payments brought, capped, once', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const plan = await createPlan(app, { amount: 5000, currency: 'NGN' });

  await fc.assert(
    fc.asyncProperty(history, async ({ subscriptions, reports, together }) => {
      const subs: string[] = [];
      for (const second of subscriptions) {
        const customer = await createCustomer(app);
        const res = await app.request('POST', '/api/subscriptions', {
          body: { customer_id: customer.id, plan_id: plan.id },
        });
        assert.equal(res.status, 201, res.text);
        subs.push(res.body.id);
        if (second)
          await issueSecond(
            app,
            res.body.id,
            new Date(Date.parse(res.body.created_at) + 31 * 86_400_000).toISOString(),
          );
      }
      const invoicesAtStart = await Promise.all(subs.map((id) => invoicesOf(app, id)));
      const payments: (ProviderPayment & { reference: string })[] = reports.map((report, i) => {
        const index = report.subscription % subs.length;
        const named = report.names === 'none' ? undefined : invoicesAtStart[index]![report.names === 'first' ? 0 : 1];
        return {
          subscriptionId: subs[index]!,
          amount: report.amount,
          currency: report.currency,
          invoiceId: named?.id,
          failed: report.failed,
          reference: `P${Date.now()}_${i}_${Math.random().toString(36).slice(2)}`,
        };
      });
      let at = 0;
      let group = 0;
      while (at < payments.length) {
        const size = together[group++ % together.length]!;
        const batch = payments.slice(at, at + size);
        at += size;
        const answers = await Promise.all(batch.map((payment) => reportPayment(app, payment)));
        for (const answer of answers) assert.equal(answer.status, 200);
      }
      await checkInvoices(app, subs, payments);
    }),
    { numRuns: RUNS, seed: SEED },
  );
});

async function checkInvoices(app: TestApp, subs: readonly string[], sent: readonly ProviderPayment[]) {
  const { db } = app.deps;
  for (const subscriptionId of subs) {
    const invoices = await invoicesOf(app, subscriptionId);
    assert.equal(new Set(invoices.map((i) => i.period_start)).size, invoices.length, 'one invoice per period');
    const payments = await db
      .selectFrom('payments')
      .selectAll()
      .where('subscription_id', '=', subscriptionId)
      .execute();
    for (const invoice of invoices) {
      const mine = payments.filter((p) => p.invoice_id === invoice.id);
      assert.ok(
        mine.every((p) => p.status !== 'failed'),
        `${invoice.id}: only succeeded payments settle`,
      );
      const brought = mine.reduce((sum, p) => sum + Number(p.amount), 0);
      assert.ok(invoice.amount_paid >= 0 && invoice.amount_paid <= invoice.amount_due, `${invoice.id}: within due`);
      assert.equal(
        invoice.amount_paid,
        Math.min(invoice.amount_due, brought),
        `${invoice.id}: what its payments brought`,
      );
      assert.equal(
        invoice.status === 'paid',
        invoice.amount_remaining === 0,
        `${invoice.id}: paid iff nothing remains`,
      );
      assert.equal(invoice.amount_remaining, invoice.amount_due - invoice.amount_paid);
      // The payments that settled it came before it was paid: none after (no payment tops up a paid invoice).
      if (invoice.status !== 'paid') assert.ok(brought < invoice.amount_due, `${invoice.id}: open means short`);

      const events = await db
        .selectFrom('events')
        .select(['topic', 'data'])
        .where('topic', 'like', 'invoice.%')
        .where('data', 'like', `%${invoice.id}%`)
        .execute();
      const topics = events.filter((e) => JSON.parse(e.data).id === invoice.id).map((e) => e.topic);
      assert.equal(topics.filter((topic) => topic === 'invoice.created').length, 1, `${invoice.id}: created once`);
      assert.equal(
        topics.filter((topic) => topic === 'invoice.paid').length,
        invoice.status === 'paid' ? 1 : 0,
        `${invoice.id}: paid once, when paid`,
      );
      assert.equal(
        topics.filter((topic) => topic === 'invoice.payment_failed').length,
        invoice.attempt_count,
        `${invoice.id}: one payment_failed per attempt counted`,
      );
    }
    // Money is conserved: what the NGN payments brought is what the invoices took plus the credit left over.
    const ledger = await db
      .selectFrom('customer_balance_transactions')
      .innerJoin('subscriptions', 'subscriptions.customer_id', 'customer_balance_transactions.customer_id')
      .select(['customer_balance_transactions.kind', 'customer_balance_transactions.amount'])
      .where('subscriptions.id', '=', subscriptionId)
      .execute();
    const credited = ledger.filter((t) => t.kind === 'overpayment').reduce((sum, t) => sum + Number(t.amount), 0);
    const brought = payments
      .filter((p) => p.currency === 'NGN' && p.status !== 'failed')
      .reduce((sum, p) => sum + Number(p.amount), 0);
    const took = invoices.reduce((sum, i) => sum + i.amount_paid, 0);
    assert.equal(brought, took + credited, `${subscriptionId}: payments = invoices' amount_paid + credit`);
    assert.ok(ledger.reduce((sum, t) => sum + Number(t.amount), 0) >= 0, `${subscriptionId}: balance ≥ 0`);
    for (const payment of payments) {
      if (payment.currency !== 'NGN')
        assert.equal(payment.invoice_id, null, `${payment.id}: another currency settles nothing`);
      else if (payment.status !== 'failed')
        assert.notEqual(payment.invoice_id, null, `${payment.id}: settled an invoice`);
    }
    const sub = (await app.request('GET', `/api/subscriptions/${subscriptionId}`)).body;
    const anyPaid = invoices.some((i) => i.status === 'paid');
    assert.equal(sub.status === 'incomplete', !anyPaid, `${subscriptionId}: incomplete until an invoice is paid`);
  }
  assert.ok(sent.length > 0);
}
