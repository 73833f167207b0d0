// Issuing a one-off invoice (SPEC §12: reason `one_off`, no subscription) and settling it, on
// both databases: composed by the pipeline with the customer's credit, the credit it takes
// recorded with it, paid out of band through the one settlement path.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import { createSubscription } from '../../test/helpers/factories.ts';
import { reportPayment } from '../../test/helpers/invoice-payments.ts';
import { PROVIDER_ENV } from '../../test/helpers/provider-events.ts';
import { lockCustomer } from '../modules/customers/customers.service.ts';
import type { InvoiceLineDraft } from './compose/types.ts';
import { issueOneOffInvoice } from './issue.ts';

const AT = '2026-01-15T10:00:00.000Z';
const END = '2026-02-15T10:00:00.000Z';

function proration(amount: number, currency = 'NGN'): InvoiceLineDraft {
  return {
    kind: 'proration',
    description: `Remaining time on Pro × 1 after 15 Jan 2026 (${amount})`,
    amount,
    currency,
    quantity: 1,
    unit_amount: amount,
    period_start: AT,
    period_end: END,
    plan_id: null,
    proration: true,
  };
}

function issue(app: TestApp, customerId: string, items: InvoiceLineDraft[], currency = 'NGN') {
  return app.deps.db.transaction().execute(async (trx) => {
    await lockCustomer(trx, customerId);
    return issueOneOffInvoice(trx, app.deps, {
      customerId,
      testClockId: null,
      currency,
      items,
      periodStart: AT,
      periodEnd: END,
      dueAt: AT,
      metadata: { reason: 'upgrade' },
    });
  });
}

test('a one-off invoice bills its items with no subscription, takes the credit, and is paid out of band like any invoice', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  // A customer with 1500 of credit: its first invoice (5000) paid with 6500.
  const sub = await createSubscription(app);
  await reportPayment(app, { subscriptionId: sub.id, amount: 6500 });
  const invoice = await issue(app, sub.customer_id, [proration(2500), proration(1200)]);
  assert.deepEqual(
    [
      invoice.subscription_id,
      invoice.status,
      invoice.subtotal,
      invoice.total,
      invoice.applied_balance,
      invoice.amount_due,
    ],
    [null, 'open', 3700, 3700, 1500, 2200],
  );
  assert.deepEqual(
    invoice.lines.map((line) => [line.kind, line.amount, line.proration]),
    [
      ['proration', 2500, true],
      ['proration', 1200, true],
    ],
  );
  assert.match(invoice.number!, /^INV-\d{6}$/);
  assert.deepEqual(invoice.metadata, { reason: 'upgrade' });
  const customer = async () => (await app.request('GET', `/api/customers/${sub.customer_id}`)).body;
  assert.deepEqual((await customer()).balances, {});
  // Every call is a new invoice: one-off invoices are not per period.
  const again = await issue(app, sub.customer_id, [proration(100)]);
  assert.notEqual(again.id, invoice.id);

  const paid = await app.request('POST', `/api/invoices/${invoice.id}/pay`, { body: { paid_out_of_band: true } });
  assert.equal(paid.status, 200, paid.text);
  assert.deepEqual([paid.body.status, paid.body.amount_paid, paid.body.amount_remaining], ['paid', 2200, 0]);
  const payments = await app.request('GET', `/api/payments?customer_id=${sub.customer_id}&provider=manual`);
  assert.deepEqual(
    payments.body.data.map((p: { invoice_id: string; subscription_id: string | null }) => [
      p.invoice_id,
      p.subscription_id,
    ]),
    [[invoice.id, null]],
  );
  // The subscription was not touched by a payment that was not its.
  assert.equal((await app.request('GET', `/api/subscriptions/${sub.id}`)).body.status, 'active');
});

test('a one-off invoice whose items the pipeline refuses is not issued, and takes no number or credit', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const sub = await createSubscription(app);
  await reportPayment(app, { subscriptionId: sub.id, amount: 6500 });
  await assert.rejects(issue(app, sub.customer_id, [proration(2500, 'USD')]), /is in USD, the invoice in NGN/);
  await assert.rejects(
    issue(app, sub.customer_id, [{ ...proration(2500), kind: 'adjustment', proration: false }]),
    /a pending item must be a proration/,
  );
  const invoices = await app.request('GET', `/api/invoices?customer_id=${sub.customer_id}`);
  assert.equal(invoices.body.meta.total, 1, 'only the first period');
  assert.deepEqual((await app.request('GET', `/api/customers/${sub.customer_id}`)).body.balances, { NGN: 1500 });
  const next = await issue(app, sub.customer_id, [proration(100)]);
  assert.equal(next.number, 'INV-000002', 'no number was lost');
});

test("a one-off invoice is taxed by its subscription's or plan's rates when given, else by the customer's", async (t) => {
  const app = await buildTestApp(t);
  const rate = async (percentage: number) =>
    (await app.request('POST', '/api/tax-rates', { body: { display_name: 'VAT', percentage, inclusive: false } })).body
      .id as string;
  const customerRate = await rate(10);
  const subscriptionRate = await rate(20);
  const customer = await app.request('POST', '/api/customers', {
    body: { email: 'one-off@example.com', tax_rate_ids: [customerRate] },
  });
  const oneOff = (taxedBy?: { subscriptionTaxRateIds?: string; planTaxRateIds?: string }) =>
    app.deps.db.transaction().execute(async (trx) => {
      await lockCustomer(trx, customer.body.id);
      return issueOneOffInvoice(trx, app.deps, {
        customerId: customer.body.id,
        testClockId: null,
        currency: 'NGN',
        items: [proration(2500)],
        periodStart: AT,
        periodEnd: END,
        dueAt: AT,
        taxedBy,
      });
    });
  const byCustomer = await oneOff();
  assert.deepEqual([byCustomer.total_tax, byCustomer.total], [250, 2750]);
  const bySubscription = await oneOff({
    subscriptionTaxRateIds: JSON.stringify([subscriptionRate]),
    planTaxRateIds: '[]',
  });
  assert.deepEqual([bySubscription.total_tax, bySubscription.total], [500, 3000]);
  assert.equal(bySubscription.lines[1]!.tax_rate_id, subscriptionRate);
});
