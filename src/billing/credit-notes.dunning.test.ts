// A credit note on an invoice a dunning case chases (SPEC §14, §4), on both databases: the
// case's `amount_due` follows what the invoice still owes — lowered by the note, raised again
// by its void — and a note that leaves nothing owing recovers the case.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import { createCustomer, createPlan } from '../../test/helpers/factories.ts';
import { reportPayment, runWorker } from '../../test/helpers/invoice-payments.ts';
import { PROVIDER_ENV } from '../../test/helpers/provider-events.ts';

async function caseOf(app: TestApp, subscriptionId: string) {
  const res = await app.request('GET', `/api/dunning/cases?subscription_id=${subscriptionId}`);
  assert.equal(res.status, 200, res.text);
  return res.body.data[0] as { id: string; status: string; amount_due: number; invoice_id: string | null };
}

test('the dunning case chasing an invoice shows what it still owes after a credit note, and again after its void', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const plan = await createPlan(app, { amount: 5000, currency: 'NGN' });
  const customer = await createCustomer(app);
  const created = await app.request('POST', '/api/subscriptions', {
    body: { customer_id: customer.id, plan_id: plan.id },
  });
  assert.equal(created.status, 201, created.text);
  const sub = created.body as { id: string };
  assert.equal((await reportPayment(app, { subscriptionId: sub.id, amount: 5000 })).status, 200);
  // Read again: the first payment settles the period it pays for.
  const active = (await app.request('GET', `/api/subscriptions/${sub.id}`)).body as { current_period_end: string };
  app.clock.set(new Date(active.current_period_end));
  await runWorker(app.deps);
  const invoices = await app.request('GET', `/api/invoices?subscription_id=${sub.id}&sort_order=asc`);
  const renewal = invoices.body.data[1] as { id: string; status: string };
  assert.equal(renewal.status, 'open');
  await reportPayment(app, { subscriptionId: sub.id, amount: 5000, failed: true });
  const opened = await caseOf(app, sub.id);
  assert.deepEqual([opened.status, opened.invoice_id, opened.amount_due], ['open', renewal.id, 5000]);

  const note = await app.request('POST', '/api/credit-notes', { body: { invoice_id: renewal.id, amount: 2000 } });
  assert.equal(note.status, 201, note.text);
  assert.equal((await caseOf(app, sub.id)).amount_due, 3000);
  // A partial payment since: the case shows what remains after both.
  await reportPayment(app, { subscriptionId: sub.id, amount: 1000, invoiceId: renewal.id });
  const voided = await app.request('POST', `/api/credit-notes/${note.body.id}/void`);
  assert.equal(voided.status, 200, voided.text);
  const afterVoid = await caseOf(app, sub.id);
  const invoice = (await app.request('GET', `/api/invoices/${renewal.id}`)).body;
  assert.equal(afterVoid.amount_due, invoice.amount_remaining);
  assert.equal(afterVoid.status, 'open');

  // A note for all that remains pays the invoice: the case recovers.
  const all = await app.request('POST', '/api/credit-notes', {
    body: { invoice_id: renewal.id, amount: invoice.amount_remaining },
  });
  assert.equal(all.status, 201, all.text);
  assert.equal((await app.request('GET', `/api/invoices/${renewal.id}`)).body.status, 'paid');
  const closed = await app.request('GET', `/api/dunning/cases/${opened.id}`);
  assert.equal(closed.body.status, 'recovered');
});
