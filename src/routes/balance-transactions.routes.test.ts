// The credit balance ledger API (SPEC §14): GET/POST /api/customers/{id}/balance-transactions.
// Manual adjustments never take a balance below 0, not even twenty at once; the next invoice
// takes the credit; and, as a property on both databases, for random adjustments, invoices and
// payments the balance is the sum of the ledger and never below 0.
// BALANCE_PROPERTY_RUNS histories (default 12); BALANCE_PROPERTY_SEED=<seed> replays one.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import { createCustomer, createPlan } from '../../test/helpers/factories.ts';
import { reportPayment } from '../../test/helpers/invoice-payments.ts';
import { PROVIDER_ENV } from '../../test/helpers/provider-events.ts';

const UNKNOWN_CUSTOMER = 'cus_01JD3Q7Z8X9Y0A1B2C3D4E5F6G';
const RUNS = Number(process.env.BALANCE_PROPERTY_RUNS ?? 12);
const SEED = process.env.BALANCE_PROPERTY_SEED === undefined ? undefined : Number(process.env.BALANCE_PROPERTY_SEED);

function adjust(app: TestApp, customerId: string, amount: number, currency = 'NGN', description = 'By hand') {
  return app.request('POST', `/api/customers/${customerId}/balance-transactions`, {
    body: { amount, currency, description },
  });
}

async function balances(app: TestApp, customerId: string): Promise<Record<string, number>> {
  return (await app.request('GET', `/api/customers/${customerId}`)).body.balances;
}

/** Every transaction of the customer, oldest first (the whole ledger, through the API). */
async function ledger(app: TestApp, customerId: string) {
  const res = await app.request('GET', `/api/customers/${customerId}/balance-transactions?limit=100&sort_order=asc`);
  assert.equal(res.status, 200, res.text);
  return res.body.data as { type: string; amount: number; currency: string; invoice_id: string | null }[];
}

test('adjustments: credit given and taken, listed per currency, announced; never below 0; bad input is a 4xx that stores nothing', async (t) => {
  const app = await buildTestApp(t);
  const customer = await createCustomer(app);
  const given = await adjust(app, customer.id, 2500, 'NGN', 'Goodwill credit');
  assert.equal(given.status, 201, given.text);
  assert.match(given.body.id, /^cbtxn_[0-9A-Z]{26}$/);
  assert.deepEqual(given.body, {
    id: given.body.id,
    customer_id: customer.id,
    type: 'adjustment',
    amount: 2500,
    currency: 'NGN',
    description: 'Goodwill credit',
    invoice_id: null,
    payment_id: null,
    created_at: '2026-01-15T10:00:00.000Z',
  });
  app.clock.advance(1000);
  assert.equal((await adjust(app, customer.id, -1000)).status, 201);
  assert.equal((await adjust(app, customer.id, 700, 'USD')).status, 201);
  assert.deepEqual(await balances(app, customer.id), { NGN: 1500, USD: 700 });

  const refused = await adjust(app, customer.id, -1501);
  assert.equal(refused.status, 422);
  assert.deepEqual(refused.body, {
    code: 'invalid_state',
    message: `an adjustment of -1501 would take the NGN balance of customer ${customer.id} below 0 (it is 1500)`,
    details: null,
  });
  const emptied = await adjust(app, customer.id, -1500);
  assert.equal(emptied.status, 201);
  assert.equal((await adjust(app, customer.id, -1, 'EUR')).status, 422);

  for (const [body, message] of [
    [{ amount: 0, currency: 'NGN', description: 'x' }, /^amount must not be 0/],
    [{ amount: 1.5, currency: 'NGN', description: 'x' }, /amount must be an integer/],
    [{ amount: 100, currency: 'usd', description: 'x' }, /ISO 4217/],
    [{ amount: 100, currency: 'NGN' }, /Description is required/],
    [{ amount: 1_000_000_000_001, currency: 'NGN', description: 'x' }, /^amount must be at most 1000000000000$/],
  ] as const) {
    const res = await app.request('POST', `/api/customers/${customer.id}/balance-transactions`, { body });
    assert.equal(res.status, 400, JSON.stringify(body));
    assert.match(res.body.message, message);
  }
  assert.equal((await adjust(app, UNKNOWN_CUSTOMER, 100)).status, 404);
  assert.equal((await app.request('GET', `/api/customers/${UNKNOWN_CUSTOMER}/balance-transactions`)).status, 404);
  assert.equal(
    (await app.request('GET', `/api/customers/${customer.id}/balance-transactions?currency=usd`)).status,
    400,
  );

  const newestFirst = await app.request('GET', `/api/customers/${customer.id}/balance-transactions?limit=2`);
  assert.deepEqual(newestFirst.body.meta, { total: 4, page: 0, limit: 2 });
  assert.deepEqual(
    newestFirst.body.data.map((row: { amount: number }) => row.amount),
    [-1500, 700],
  );
  const usd = await app.request('GET', `/api/customers/${customer.id}/balance-transactions?currency=USD`);
  assert.deepEqual(
    usd.body.data.map((row: { amount: number; currency: string }) => [row.amount, row.currency]),
    [[700, 'USD']],
  );
  const events = await app.request('GET', '/api/events?topic=customer.balance_changed&limit=100');
  assert.equal(events.body.meta.total, 4);
  assert.deepEqual(events.body.data.at(-1).data, given.body);
});

test('twenty adjustments of −1,000 at once against a balance of 5,000: exactly five pass, the balance ends at 0', async (t) => {
  const app = await buildTestApp(t);
  const customer = await createCustomer(app);
  assert.equal((await adjust(app, customer.id, 5000)).status, 201);
  const results = await Promise.all(Array.from({ length: 20 }, () => adjust(app, customer.id, -1000)));
  const statuses = results.map((res) => res.status).sort();
  assert.deepEqual(statuses, [...Array(5).fill(201), ...Array(15).fill(422)]);
  assert.deepEqual(await balances(app, customer.id), {});
  assert.equal((await ledger(app, customer.id)).length, 6);
});

test('credit given by hand is taken by the next invoice: applied_balance, and an applied_to_invoice transaction naming it', async (t) => {
  const app = await buildTestApp(t);
  const customer = await createCustomer(app);
  const plan = await createPlan(app, { amount: 5000 });
  await adjust(app, customer.id, 2000);
  const sub = await app.request('POST', '/api/subscriptions', { body: { customer_id: customer.id, plan_id: plan.id } });
  const invoice = (await app.request('GET', `/api/invoices?subscription_id=${sub.body.id}`)).body.data[0];
  assert.deepEqual([invoice.total, invoice.applied_balance, invoice.amount_due], [5000, 2000, 3000]);
  assert.deepEqual(
    (await ledger(app, customer.id)).map((row) => [row.type, row.amount, row.invoice_id]),
    [
      ['adjustment', 2000, null],
      ['applied_to_invoice', -2000, invoice.id],
    ],
  );
  assert.deepEqual(await balances(app, customer.id), {});
});

type Step = { kind: 'adjust'; amount: number } | { kind: 'subscribe' } | { kind: 'pay'; amount: number };

const steps = fc.array(
  fc.oneof(
    fc.record({
      kind: fc.constant('adjust' as const),
      amount: fc.integer({ min: -6000, max: 6000 }).filter((a) => a !== 0),
    }),
    fc.record({ kind: fc.constant('subscribe' as const) }),
    fc.record({ kind: fc.constant('pay' as const), amount: fc.integer({ min: 1, max: 9000 }) }),
  ),
  { minLength: 1, maxLength: 8 },
);

test('property: for random adjustments, invoices and payments, the balance is the sum of the ledger and never below 0', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const plan = await createPlan(app, { amount: 5000 });
  await fc.assert(
    fc.asyncProperty(steps, async (history: Step[]) => {
      const customer = await createCustomer(app);
      const subscriptions: string[] = [];
      for (const step of history) {
        if (step.kind === 'adjust') {
          const before = (await balances(app, customer.id)).NGN ?? 0;
          const res = await adjust(app, customer.id, step.amount);
          assert.equal(res.status, before + step.amount >= 0 ? 201 : 422, res.text);
        } else if (step.kind === 'subscribe') {
          const res = await app.request('POST', '/api/subscriptions', {
            body: { customer_id: customer.id, plan_id: plan.id },
          });
          assert.equal(res.status, 201, res.text);
          subscriptions.push(res.body.id);
        } else if (subscriptions.length > 0) {
          const paid = await reportPayment(app, { subscriptionId: subscriptions.at(-1)!, amount: step.amount });
          assert.equal(paid.status, 200);
        }
        const rows = await ledger(app, customer.id);
        const sum = rows.reduce((total, row) => total + row.amount, 0);
        assert.ok(sum >= 0, `the balance went below 0: ${sum}`);
        assert.deepEqual(await balances(app, customer.id), sum === 0 ? {} : { NGN: sum });
        // Every credit an invoice took is the invoice's applied_balance.
        for (const row of rows.filter((r) => r.type === 'applied_to_invoice')) {
          const invoice = await app.request('GET', `/api/invoices/${row.invoice_id}`);
          assert.equal(invoice.body.applied_balance, -row.amount);
        }
      }
    }),
    { numRuns: RUNS, seed: SEED },
  );
});
