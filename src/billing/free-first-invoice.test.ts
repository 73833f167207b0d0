// A first invoice that owes nothing (SPEC §9, §12): a free or purely metered plan, or credit
// covering the first period. No payment will ever come for it, so it is paid at issue and the
// subscription is `active` at once — never left `incomplete` to expire. Both databases.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp } from '../../test/helpers/app.ts';
import { createCustomer, createPlan } from '../../test/helpers/factories.ts';
import { invoicesOf, runWorker } from '../../test/helpers/invoice-payments.ts';

async function subscribe(app: Awaited<ReturnType<typeof buildTestApp>>, customerId: string, planId: string) {
  const res = await app.request('POST', '/api/subscriptions', { body: { customer_id: customerId, plan_id: planId } });
  assert.equal(res.status, 201, res.text);
  return res.body;
}

async function topicsOf(app: Awaited<ReturnType<typeof buildTestApp>>, subscriptionId: string) {
  const rows = await app.deps.db
    .selectFrom('events')
    .select(['topic', 'data'])
    .where('topic', 'like', 'subscription.%')
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.filter((row) => JSON.parse(row.data).id === subscriptionId).map((row) => row.topic);
}

test('a free plan: the first invoice is paid at issue and the subscription is active', async (t) => {
  const app = await buildTestApp(t);
  const customer = await createCustomer(app);
  const plan = await createPlan(app, { amount: 0 });
  const created = await subscribe(app, customer.id, plan.id);
  assert.equal(created.status, 'active');
  const [invoice, ...others] = await invoicesOf(app, created.id);
  assert.equal(others.length, 0);
  assert.equal(invoice!.status, 'paid');
  assert.equal(invoice!.amount_due, 0);
  assert.deepEqual(await topicsOf(app, created.id), ['subscription.created', 'subscription.updated']);
  // A day on, the worker (incomplete expiry among its jobs) leaves it active.
  app.clock.advance(24 * 3_600_000);
  await runWorker(app.deps);
  assert.equal((await app.request('GET', `/api/subscriptions/${created.id}`)).body.status, 'active');
});

test('credit covering the first period pays it; credit short of it leaves the subscription incomplete', async (t) => {
  const app = await buildTestApp(t);
  const plan = await createPlan(app, { amount: 5000 });
  const rich = await createCustomer(app);
  const poor = await createCustomer(app);
  for (const [customer, amount] of [
    [rich, 5000],
    [poor, 4999],
  ] as const) {
    const res = await app.request('POST', `/api/customers/${customer.id}/balance-transactions`, {
      body: { amount, currency: 'NGN', description: 'Goodwill' },
    });
    assert.equal(res.status, 201, res.text);
  }
  const covered = await subscribe(app, rich.id, plan.id);
  assert.equal(covered.status, 'active');
  assert.equal((await invoicesOf(app, covered.id))[0]!.status, 'paid');
  const short = await subscribe(app, poor.id, plan.id);
  assert.equal(short.status, 'incomplete');
  const [open] = await invoicesOf(app, short.id);
  assert.equal(open!.status, 'open');
  assert.equal(open!.amount_due, 1);
});
