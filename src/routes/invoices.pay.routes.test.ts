// POST /api/invoices/{id}/pay (SPEC §9): paid out of band. Both databases.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import { createSubscription } from '../../test/helpers/factories.ts';
import { invoiceById, invoiceEvents, invoicesOf, reportPayment } from '../../test/helpers/invoice-payments.ts';
import { PROVIDER_ENV } from '../../test/helpers/provider-events.ts';
import { lockInvoice, transitionInvoice } from '../modules/invoices/invoices.lifecycle.ts';

function pay(app: TestApp, id: string, body: unknown = { paid_out_of_band: true }, headers?: Record<string, string>) {
  return app.request('POST', `/api/invoices/${id}/pay`, { body, headers });
}

test('paying out of band records a manual payment for what remains, pays the invoice and activates the subscription', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const sub = await createSubscription(app);
  const [invoice] = await invoicesOf(app, sub.id);
  await reportPayment(app, { subscriptionId: sub.id, amount: 1500 });

  const res = await pay(app, invoice!.id, { paid_out_of_band: true, reference: 'TRF-2026-0117-4411' });
  assert.equal(res.status, 200);
  assert.equal(res.body.id, invoice!.id);
  assert.equal(res.body.status, 'paid');
  assert.equal(res.body.amount_paid, 5000);
  assert.equal(res.body.amount_remaining, 0);
  assert.deepEqual(res.body, await invoiceById(app, invoice!.id));

  const payments = (await app.request('GET', `/api/payments?customer_id=${sub.customer_id}&provider=manual`)).body;
  assert.equal(payments.meta.total, 1);
  assert.deepEqual(
    {
      provider: payments.data[0].provider,
      provider_reference: payments.data[0].provider_reference,
      amount: payments.data[0].amount,
      currency: payments.data[0].currency,
      status: payments.data[0].status,
      subscription_id: payments.data[0].subscription_id,
      invoice_id: payments.data[0].invoice_id,
    },
    {
      provider: 'manual',
      provider_reference: 'TRF-2026-0117-4411',
      amount: 3500,
      currency: 'NGN',
      status: 'succeeded',
      subscription_id: sub.id,
      invoice_id: invoice!.id,
    },
  );
  const after = (await app.request('GET', `/api/subscriptions/${sub.id}`)).body;
  assert.equal(after.status, 'active');
  assert.deepEqual(
    (await invoiceEvents(app)).map((e) => e.topic),
    ['invoice.created', 'invoice.paid'],
  );
});

test('pay on a paid or void invoice is 409 validation_error and changes nothing; unknown ids are 404; a bad body is 400', async (t) => {
  const app = await buildTestApp(t);
  const sub = await createSubscription(app);
  const [invoice] = await invoicesOf(app, sub.id);
  assert.equal((await pay(app, invoice!.id)).status, 200);
  const paid = await invoiceById(app, invoice!.id);
  const again = await pay(app, invoice!.id);
  assert.equal(again.status, 409);
  assert.equal(again.body.code, 'validation_error');
  assert.match(again.body.message, /^invoice cannot be paid in its current state/);
  assert.deepEqual(await invoiceById(app, invoice!.id), paid);

  const other = await createSubscription(app);
  const [toVoid] = await invoicesOf(app, other.id);
  await app.deps.db
    .transaction()
    .execute(async (trx) => transitionInvoice(trx, app.deps, await lockInvoice(trx, toVoid!.id), 'void'));
  const onVoid = await pay(app, toVoid!.id);
  assert.equal(onVoid.status, 409);
  assert.equal(onVoid.body.code, 'validation_error');
  assert.equal((await invoiceById(app, toVoid!.id)).status, 'void');
  const manual = await app.request('GET', '/api/payments?provider=manual');
  assert.equal(manual.body.meta.total, 1);

  assert.equal((await pay(app, 'inv_01JD3Q7Z8X9Y0A1B2C3D4E5F6G')).status, 404);
  assert.equal((await pay(app, 'nope')).status, 404);
  const third = await createSubscription(app);
  const [open] = await invoicesOf(app, third.id);
  for (const body of [
    {},
    { paid_out_of_band: false },
    { paid_out_of_band: true, extra: 1 },
    { paid_out_of_band: true, reference: '' },
  ]) {
    const res = await pay(app, open!.id, body);
    assert.equal(res.status, 400, JSON.stringify(body));
    assert.equal(res.body.code, 'validation_error');
  }
  // A reference already recorded for another manual payment.
  const dup = await pay(app, open!.id, { paid_out_of_band: true, reference: manual.body.data[0].provider_reference });
  assert.equal(dup.status, 409);
  assert.equal((await invoiceById(app, open!.id)).status, 'open');
});

test('an uncollectible invoice can be paid out of band; the cancelled subscription stays cancelled', async (t) => {
  const app = await buildTestApp(t);
  const sub = await createSubscription(app);
  const [invoice] = await invoicesOf(app, sub.id);
  await app.request('PUT', `/api/subscriptions/${sub.id}/cancel`);
  await app.deps.db
    .transaction()
    .execute(async (trx) =>
      transitionInvoice(trx, app.deps, await lockInvoice(trx, invoice!.id), 'mark_uncollectible'),
    );
  const res = await pay(app, invoice!.id);
  assert.equal(res.status, 200);
  assert.equal(res.body.status, 'paid');
  assert.equal((await app.request('GET', `/api/subscriptions/${sub.id}`)).body.status, 'cancelled');
});

test('pay with an Idempotency-Key runs once: the replay answers the same, one payment, one invoice.paid', async (t) => {
  const app = await buildTestApp(t);
  const sub = await createSubscription(app);
  const [invoice] = await invoicesOf(app, sub.id);
  const headers = { 'idempotency-key': 'pay-once-1' };
  const first = await pay(app, invoice!.id, { paid_out_of_band: true }, headers);
  const replay = await pay(app, invoice!.id, { paid_out_of_band: true }, headers);
  assert.equal(first.status, 200);
  assert.equal(replay.status, 200);
  assert.deepEqual(replay.body, first.body);
  assert.equal((await app.request('GET', '/api/payments?provider=manual')).body.meta.total, 1);
  assert.equal((await invoiceEvents(app)).filter((e) => e.topic === 'invoice.paid').length, 1);
});

test('pay needs an API key', async (t) => {
  const app = await buildTestApp(t);
  const sub = await createSubscription(app);
  const [invoice] = await invoicesOf(app, sub.id);
  const res = await app.request('POST', `/api/invoices/${invoice!.id}/pay`, {
    body: { paid_out_of_band: true },
    key: null,
  });
  assert.equal(res.status, 401);
});
