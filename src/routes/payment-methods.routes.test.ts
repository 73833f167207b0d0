// /api/customers/{id}/payment-methods (SPEC §10): list, PATCH {default: true}, DELETE.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import { createCustomer, createSubscription } from '../../test/helpers/factories.ts';
import { saveTestPaymentMethod } from '../../test/helpers/payment-methods.ts';
import { appWithFakeProviders } from '../../test/helpers/provider-apps.ts';
import { chargeDueInvoices, requestInvoiceCharge } from '../billing/charges.ts';
import { lockInvoice } from '../modules/invoices/invoices.lifecycle.ts';
import { findDefaultPaymentMethod } from '../modules/payment-methods/payment-methods.ts';

async function list(app: TestApp, customerId: string, query = '') {
  const res = await app.request('GET', `/api/customers/${customerId}/payment-methods${query}`);
  assert.equal(res.status, 200, res.text);
  return res.body;
}

async function topics(app: TestApp, topic: string) {
  return (await app.request('GET', `/api/events?topic=${topic}&limit=100`)).body.data as { data: any }[];
}

/** A customer with three saved cards, saved 1 s apart (the last one is the default). */
async function customerWithThreeCards(app: TestApp) {
  const customer = await createCustomer(app);
  const rows = [];
  for (const last4 of ['1111', '2222', '3333']) {
    rows.push(await saveTestPaymentMethod(app, customer.id, 'paystack', { last4 }));
    app.clock.advance(1000);
  }
  return { customer, rows };
}

test('list: the active methods newest first, the latest saved one is the default; no secret field', async (t) => {
  const app = await buildTestApp(t);
  const { customer, rows } = await customerWithThreeCards(app);
  const body = await list(app, customer.id);
  assert.deepEqual(body.meta, { total: 3, page: 0, limit: 10 });
  assert.deepEqual(
    body.data.map((m: { last4: string; default: boolean }) => [m.last4, m.default]),
    [
      ['3333', true],
      ['2222', false],
      ['1111', false],
    ],
  );
  assert.deepEqual(Object.keys(body.data[0]).sort(), [
    'brand',
    'created_at',
    'customer_id',
    'default',
    'detached_at',
    'exp_month',
    'exp_year',
    'id',
    'last4',
    'provider',
    'status',
    'type',
  ]);
  const page = await list(app, customer.id, '?sort_order=asc&limit=1&page=1');
  assert.equal(page.data[0].id, rows[1]!.id);
  assert.equal(page.meta.total, 3);
  // Another customer's list is their own.
  const other = await createCustomer(app);
  assert.deepEqual((await list(app, other.id)).data, []);
});

test('list of an unknown, malformed or deleted customer is 404', async (t) => {
  const app = await buildTestApp(t);
  for (const id of ['cus_01JD3Q7Z8X9Y0A1B2C3D4E5F6G', 'nope']) {
    assert.equal((await app.request('GET', `/api/customers/${id}/payment-methods`)).status, 404);
  }
  const customer = await createCustomer(app);
  assert.equal((await app.request('DELETE', `/api/customers/${customer.id}`)).status, 204);
  const res = await app.request('GET', `/api/customers/${customer.id}/payment-methods`);
  assert.equal(res.status, 404);
  assert.equal(res.body.code, 'not_found');
});

test('PATCH {default: true} makes an older method the default, also within the same millisecond', async (t) => {
  const app = await buildTestApp(t);
  const { customer, rows } = await customerWithThreeCards(app);
  const oldest = rows[0]!;
  // The clock has not moved since the last save: default_at must still pass the latest one.
  app.clock.advance(-1000);
  const res = await app.request('PATCH', `/api/customers/${customer.id}/payment-methods/${oldest.id}`, {
    body: { default: true },
  });
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.id, oldest.id);
  assert.equal(res.body.default, true);
  const body = await list(app, customer.id);
  assert.deepEqual(
    body.data.filter((m: { default: boolean }) => m.default).map((m: { id: string }) => m.id),
    [oldest.id],
  );
  assert.equal((await findDefaultPaymentMethod(app.deps.db, app.deps, customer.id))?.id, oldest.id);
  // A card saved later becomes the default again (the latest reusable one).
  app.clock.advance(5000);
  const newest = await saveTestPaymentMethod(app, customer.id, 'paystack', { last4: '4444' });
  assert.equal((await findDefaultPaymentMethod(app.deps.db, app.deps, customer.id))?.id, newest.id);
});

test('PATCH {default: false} is 400; unknown fields 400; other customer’s or unknown method 404', async (t) => {
  const app = await buildTestApp(t);
  const { customer, rows } = await customerWithThreeCards(app);
  const path = `/api/customers/${customer.id}/payment-methods/${rows[0]!.id}`;
  const refused = await app.request('PATCH', path, { body: { default: false } });
  assert.equal(refused.status, 400);
  assert.equal(refused.body.code, 'validation_error');
  assert.match(refused.body.message, /default/);
  assert.equal((await app.request('PATCH', path, { body: { default: true, last4: '9999' } })).status, 400);
  assert.equal((await app.request('PATCH', path, { body: {} })).status, 400);
  const other = await createCustomer(app);
  for (const [customerId, pm] of [
    [other.id, rows[0]!.id],
    [customer.id, 'pm_01JD3Q7Z8X9Y0A1B2C3D4E5F6G'],
    [customer.id, 'nope'],
    ['cus_01JD3Q7Z8X9Y0A1B2C3D4E5F6G', rows[0]!.id],
  ]) {
    const res = await app.request('PATCH', `/api/customers/${customerId}/payment-methods/${pm}`, {
      body: { default: true },
    });
    assert.equal(res.status, 404, `${customerId} ${pm}`);
    assert.equal((await app.request('DELETE', `/api/customers/${customerId}/payment-methods/${pm}`)).status, 404);
  }
});

test('DELETE detaches: 204, payment_method.detached, gone from the list, never the default; twice is 404', async (t) => {
  const app = await buildTestApp(t);
  const { customer, rows } = await customerWithThreeCards(app);
  const latest = rows[2]!;
  const path = `/api/customers/${customer.id}/payment-methods/${latest.id}`;
  const res = await app.request('DELETE', path);
  assert.equal(res.status, 204);
  assert.equal(res.text, '');
  const body = await list(app, customer.id);
  assert.deepEqual(
    body.data.map((m: { id: string; default: boolean }) => [m.id, m.default]),
    [
      [rows[1]!.id, true],
      [rows[0]!.id, false],
    ],
  );
  assert.equal((await findDefaultPaymentMethod(app.deps.db, app.deps, customer.id))?.id, rows[1]!.id);
  const [event] = await topics(app, 'payment_method.detached');
  assert.equal(event!.data.id, latest.id);
  assert.equal(event!.data.status, 'detached');
  assert.equal(event!.data.default, false);
  assert.equal(event!.data.detached_at, '2026-01-15T10:00:03.000Z');
  assert.equal(event!.data.credential, undefined);
  assert.equal((await app.request('DELETE', path)).status, 404);
  assert.equal((await app.request('PATCH', path, { body: { default: true } })).status, 404);
  assert.equal((await topics(app, 'payment_method.detached')).length, 1);
});

test('savePaymentMethod emits payment_method.attached once per new method', async (t) => {
  const app = await buildTestApp(t);
  const customer = await createCustomer(app);
  const row = await saveTestPaymentMethod(app, customer.id, 'stripe', { credential: 'pm_card_same' });
  await saveTestPaymentMethod(app, customer.id, 'stripe', { credential: 'pm_card_same' });
  const events = await topics(app, 'payment_method.attached');
  assert.equal(events.length, 1);
  assert.equal(events[0]!.data.id, row.id);
  assert.equal(events[0]!.data.default, true);
  assert.ok(!JSON.stringify(events[0]!.data).includes('pm_card_same'));
});

test('scopes: a read key lists but cannot PATCH or DELETE (403)', async (t) => {
  const app = await buildTestApp(t);
  const { customer, rows } = await customerWithThreeCards(app);
  const created = await app.request('POST', '/api/api-keys', { body: { name: 'reader', scope: 'read' } });
  assert.equal(created.status, 201, created.text);
  const key = created.body.key as string;
  const path = `/api/customers/${customer.id}/payment-methods`;
  assert.equal((await app.request('GET', path, { key })).status, 200);
  assert.equal((await app.request('PATCH', `${path}/${rows[0]!.id}`, { key, body: { default: true } })).status, 403);
  assert.equal((await app.request('DELETE', `${path}/${rows[0]!.id}`, { key })).status, 403);
});

test('deleting a customer detaches its saved methods in the same transaction, with events; they are never charged again', async (t) => {
  const app = await appWithFakeProviders(t);
  // A cancelled subscription leaves its first invoice open (the customer may still pay it).
  const subscription = await createSubscription(app, { plan: { currency: 'NGN', amount: 5000 } });
  const customerId = subscription.customer_id as string;
  const first = await saveTestPaymentMethod(app, customerId, 'paystack', { last4: '1111' });
  app.clock.advance(1000);
  const second = await saveTestPaymentMethod(app, customerId, 'stripe', { last4: '2222' });
  app.clock.advance(1000);
  const other = await createCustomer(app);
  const kept = await saveTestPaymentMethod(app, other.id, 'paystack');
  const cancel = await app.request('PUT', `/api/subscriptions/${subscription.id}/cancel`);
  assert.equal(cancel.status, 200, cancel.text);
  const invoice = (await app.request('GET', `/api/invoices?subscription_id=${subscription.id}`)).body.data[0];
  assert.equal(invoice.status, 'open');

  app.clock.advance(1000);
  const deleted = await app.request('DELETE', `/api/customers/${customerId}`);
  assert.equal(deleted.status, 204, deleted.text);

  const rows = await app.deps.db
    .selectFrom('payment_methods')
    .select(['id', 'status', 'detached_at'])
    .orderBy('created_at')
    .execute();
  const now = app.clock.now().toISOString();
  assert.deepEqual(
    rows.map((r) => [r.id, r.status, r.detached_at === null ? null : new Date(r.detached_at).toISOString()]),
    [
      [first.id, 'detached', now],
      [second.id, 'detached', now],
      [kept.id, 'active', null],
    ],
  );
  const detached = (await topics(app, 'payment_method.detached')).map((e) => e.data).reverse();
  assert.deepEqual(
    detached.map((m) => [m.id, m.status, m.default, m.detached_at]),
    [
      [first.id, 'detached', false, now],
      [second.id, 'detached', false, now],
    ],
  );
  assert.equal(await findDefaultPaymentMethod(app.deps.db, app.deps, customerId), undefined);
  assert.equal((await app.request('GET', `/api/customers/${customerId}/payment-methods`)).status, 404);

  // The open invoice is asked to be charged: nothing of the deleted customer's is charged.
  await app.deps.db.transaction().execute(async (trx) => {
    await requestInvoiceCharge(trx, app.deps, await lockInvoice(trx, invoice.id));
  });
  await chargeDueInvoices(app.deps);
  assert.equal(app.paystack.chargeCalls.length + app.stripe.chargeCalls.length, 0);
  assert.equal((await app.request('GET', `/api/invoices/${invoice.id}`)).body.payment_attempts.length, 0);
});

test('a failed customer delete (a live subscription) detaches nothing', async (t) => {
  const app = await buildTestApp(t);
  const subscription = await createSubscription(app);
  const method = await saveTestPaymentMethod(app, subscription.customer_id, 'paystack');
  const res = await app.request('DELETE', `/api/customers/${subscription.customer_id}`);
  assert.equal(res.status, 409, res.text);
  const row = await app.deps.db
    .selectFrom('payment_methods')
    .select('status')
    .where('id', '=', method.id)
    .executeTakeFirstOrThrow();
  assert.equal(row.status, 'active');
  assert.equal((await topics(app, 'payment_method.detached')).length, 0);
});
