import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import { PROVIDER_ENV, paystackCharge, postPaystack } from '../../test/helpers/provider-events.ts';

async function payments(app: TestApp) {
  return (await app.request('GET', '/api/payments?limit=100')).body as {
    meta: { total: number };
    data: { customer_id: string | null; provider_reference: string }[];
  };
}

async function inboxStatuses(app: TestApp) {
  const rows = await app.deps.db.selectFrom('provider_events').select('status').execute();
  return rows.map((row) => row.status);
}

test('two charges with one non-ASCII email in different spellings: two payments, one customer', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const first = paystackCharge({ email: 'Ädä.Ünï@example.com' });
  const second = paystackCharge({ email: 'ädä.ÜNÏ@EXAMPLE.com'.normalize('NFD') });
  const third = paystackCharge({ email: 'ÄDÄ.ÜNÏ@example.com' });
  for (const charge of [first, second, third]) assert.equal((await postPaystack(app, charge)).status, 200);

  assert.deepEqual(await inboxStatuses(app), ['processed', 'processed', 'processed']);
  const customers = (await app.request('GET', '/api/customers')).body;
  assert.equal(customers.meta.total, 1);
  assert.equal(customers.data[0].email, 'Ädä.Ünï@example.com', 'stored as first sent');
  const list = await payments(app);
  assert.equal(list.meta.total, 3);
  assert.deepEqual(
    list.data.map((p) => p.customer_id),
    [customers.data[0].id, customers.data[0].id, customers.data[0].id],
  );
  const created = (await app.request('GET', '/api/events?topic=customer.created')).body;
  assert.equal(created.meta.total, 1);
});

test('attribution finds the customer the API created, whatever the spelling of its email', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const customer = (await app.request('POST', '/api/customers', { body: { email: 'Ädä@example.com' } })).body;
  assert.ok(customer.id);
  await postPaystack(app, paystackCharge({ email: 'ÄDÄ@EXAMPLE.COM'.normalize('NFD') }));
  const list = await payments(app);
  assert.equal(list.meta.total, 1);
  assert.equal(list.data[0]!.customer_id, customer.id);
  assert.equal((await app.request('GET', '/api/customers')).body.meta.total, 1);
  assert.equal((await app.request('GET', '/api/events?topic=customer.created')).body.meta.total, 1);
});

test('the API then refuses a customer attribution created, whatever the spelling', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  await postPaystack(app, paystackCharge({ email: 'Ünï@exämple.com'.normalize('NFD') }));
  const dup = await app.request('POST', '/api/customers', { body: { email: 'ÜNÏ@EXÄMPLE.COM' } });
  assert.equal(dup.status, 409);
  assert.equal(dup.body.code, 'conflict');
});

test('an email the API would refuse creates no customer: the payment is recorded unattributed', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const charge = paystackCharge({ email: 'payer@example..com' });
  assert.equal((await postPaystack(app, charge)).status, 200);
  assert.equal((await app.request('POST', '/api/customers', { body: { email: 'payer@example..com' } })).status, 400);
  const list = await payments(app);
  assert.equal(list.meta.total, 1);
  assert.equal(list.data[0]!.customer_id, null);
  assert.equal((await app.request('GET', '/api/customers')).body.meta.total, 0);
});
