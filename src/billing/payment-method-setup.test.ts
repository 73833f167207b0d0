// Adding a payment method without paying an invoice (SPEC §10 "Adding a method"): POST
// /api/customers/{id}/payment-methods/setup against the fake providers over real HTTP, their
// signed events through /api/notify, on both databases.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { createCustomer, createSubscription } from '../../test/helpers/factories.ts';
import { appWithFakeProviders } from '../../test/helpers/provider-apps.ts';
import { resolveUnknownRefunds } from '../worker/refunds.jobs.ts';

async function setupApp(t: TestContext) {
  const app = await appWithFakeProviders(t);
  app.paystack.webhookTarget = { url: app.baseUrl };
  app.stripe.webhookTarget = { url: app.baseUrl, now: () => app.clock.now() };
  return app;
}

type App = Awaited<ReturnType<typeof setupApp>>;

async function methods(app: App, customerId: string) {
  const res = await app.request('GET', `/api/customers/${customerId}/payment-methods`);
  assert.equal(res.status, 200, res.text);
  return res.body.data as { provider: string; default: boolean; last4: string | null; brand: string | null }[];
}

/** What the customer's invoices, payments and credit are: none of them may move. */
async function money(app: App, customerId: string) {
  const invoices = await app.deps.db
    .selectFrom('invoices')
    .select(['id', 'status', 'amount_paid'])
    .where('customer_id', '=', customerId)
    .orderBy('id')
    .execute();
  const ledger = await app.deps.db
    .selectFrom('customer_balance_transactions')
    .select('id')
    .where('customer_id', '=', customerId)
    .execute();
  return { invoices: invoices.map((i) => ({ ...i, amount_paid: Number(i.amount_paid) })), ledger: ledger.length };
}

test('Stripe: a setup-mode session; its completion saves the method as the default, no payment, no invoice moved', async (t) => {
  const app = await setupApp(t);
  const sub = await createSubscription(app, { plan: { currency: 'USD' } });
  const customer = { id: sub.customer_id as string };
  const before = await money(app, customer.id);
  const res = await app.request('POST', `/api/customers/${customer.id}/payment-methods/setup`, {
    body: { provider: 'stripe', return_url: 'https://app.example.com/methods' },
  });
  assert.equal(res.status, 201, res.text);
  assert.equal(res.body.provider, 'stripe');
  assert.equal(res.body.currency, 'USD');
  assert.equal(res.body.verification_amount, 0);
  assert.match(res.body.url, /^https:\/\/checkout\.stripe\.com\//);
  assert.ok(Date.parse(res.body.expires_at) > Date.now());
  const call = app.stripe.sessionCalls.at(-1)!.body as Record<string, any>;
  assert.equal(call.mode, 'setup');
  assert.equal(call.currency, 'usd');
  assert.equal(call.customer_creation, 'always');
  assert.equal(call.success_url, 'https://app.example.com/methods');
  assert.equal(call.setup_intent_data.metadata.customer_id, customer.id);
  assert.equal(call.line_items, undefined);

  const sessionId = /\/pay\/(cs_[^/?#]+)/.exec(res.body.url)![1]!;
  const pm = app.stripe.completeSetup(sessionId, { last4: '4444' });
  // Twice: a repeated delivery changes nothing.
  assert.deepEqual(await app.stripe.sendSetupWebhooks(sessionId), [200, 200]);
  assert.deepEqual(await app.stripe.sendSetupWebhooks(sessionId), [200, 200]);
  const saved = await methods(app, customer.id);
  assert.equal(saved.length, 1);
  assert.equal(saved[0]!.provider, 'stripe');
  assert.equal(saved[0]!.default, true);
  const row = await app.deps.db
    .selectFrom('payment_methods')
    .select(['fingerprint', 'provider_customer_id'])
    .where('customer_id', '=', customer.id)
    .executeTakeFirstOrThrow();
  assert.equal(row.fingerprint, pm);
  assert.match(row.provider_customer_id!, /^cus_/);
  const payments = await app.deps.db
    .selectFrom('payments')
    .select('id')
    .where('customer_id', '=', customer.id)
    .execute();
  assert.deepEqual(payments, []);
  assert.deepEqual(await money(app, customer.id), before);
  const attached = await app.request('GET', '/api/events?topic=payment_method.attached');
  assert.equal(attached.body.data.length, 1);

  // A second setup joins the Stripe customer the first method is attached to.
  const again = await app.request('POST', `/api/customers/${customer.id}/payment-methods/setup`, {
    body: { provider: 'stripe' },
  });
  assert.equal(again.status, 201, again.text);
  const second = app.stripe.sessionCalls.at(-1)!.body as Record<string, any>;
  assert.equal(second.customer, row.provider_customer_id);
  assert.equal(second.customer_creation, undefined);
  assert.equal(second.success_url, app.deps.config.publicUrl);
});

test('Stripe: an event naming no customer of ours, or a deleted one, saves nothing', async (t) => {
  const app = await setupApp(t);
  const customer = await createCustomer(app);
  const res = await app.request('POST', `/api/customers/${customer.id}/payment-methods/setup`, {
    body: { provider: 'stripe', currency: 'eur' },
  });
  assert.equal(res.status, 201, res.text);
  assert.equal(res.body.currency, 'EUR');
  const sessionId = /\/pay\/(cs_[^/?#]+)/.exec(res.body.url)![1]!;
  app.stripe.completeSetup(sessionId);
  assert.equal((await app.request('DELETE', `/api/customers/${customer.id}`)).status, 204);
  assert.deepEqual(await app.stripe.sendSetupWebhooks(sessionId), [200, 200]);
  const count = await app.deps.db.selectFrom('payment_methods').select('id').execute();
  assert.equal(count.length, 0);
  const failed = await app.request('GET', '/api/provider-events?status=failed');
  assert.equal(failed.status, 200, failed.text);
  assert.equal(failed.body.data.length, 1);
  assert.match(failed.body.data[0].error, /unknown or deleted/);
});

test('Paystack: a verification charge saves the card, is refunded exactly once, settles nothing and makes no credit', async (t) => {
  const app = await setupApp(t);
  const sub = await createSubscription(app);
  const customerId = sub.customer_id as string;
  const before = await money(app, customerId);
  const res = await app.request('POST', `/api/customers/${customerId}/payment-methods/setup`, {
    body: { provider: 'paystack' },
  });
  assert.equal(res.status, 201, res.text);
  assert.deepEqual(
    { currency: res.body.currency, amount: res.body.verification_amount, expires: res.body.expires_at },
    { currency: 'NGN', amount: 5000, expires: undefined },
  );
  assert.match(res.body.url, /^https:\/\/checkout\.paystack\.com\//);
  const init = app.paystack.initializeCalls.at(-1)!.body as Record<string, any>;
  assert.equal(init.amount, 5000);
  assert.deepEqual(init.metadata, { customer_id: customerId, purpose: 'card_verification' });

  app.paystack.settle(res.body.reference, 'success');
  // Delivered twice, and the worker run twice: one refund.
  assert.equal(await app.paystack.sendChargeWebhook(res.body.reference), 200);
  assert.equal(await app.paystack.sendChargeWebhook(res.body.reference), 200);
  await resolveUnknownRefunds.run(app.deps);
  await resolveUnknownRefunds.run(app.deps);
  assert.equal(app.paystack.refundCalls.length, 1);
  const [refund] = [...app.paystack.refunds.values()];
  assert.equal(refund!.amount, 5000);
  assert.equal(refund!.transaction_reference, res.body.reference);
  assert.equal(await app.paystack.sendRefundEvent(app.baseUrl, refund!.id, 'processed'), 200);

  const saved = await methods(app, customerId);
  assert.equal(saved.length, 1);
  assert.equal(saved[0]!.provider, 'paystack');
  assert.equal(saved[0]!.default, true);
  const payment = await app.deps.db
    .selectFrom('payments')
    .selectAll()
    .where('provider_reference', '=', res.body.reference)
    .executeTakeFirstOrThrow();
  assert.equal(payment.customer_id, customerId);
  assert.equal(payment.subscription_id, null);
  assert.equal(Number(payment.amount_refunded), 5000);
  const refunds = await app.deps.db.selectFrom('refunds').selectAll().where('payment_id', '=', payment.id).execute();
  assert.deepEqual(
    refunds.map((r) => [r.status, Number(r.amount)]),
    [['succeeded', 5000]],
  );
  assert.deepEqual(await money(app, customerId), before);
  // Another sub's customer: still open, never paid by the verification.
  assert.ok(before.invoices.length > 0);
});

test("Paystack: the verification charge is Paystack's minimum per currency (USD 2.00, not 0.20)", async (t) => {
  const app = await setupApp(t);
  const customer = await createCustomer(app);
  const charged: Record<string, number> = {};
  for (const currency of ['NGN', 'GHS', 'ZAR', 'USD']) {
    const res = await app.request('POST', `/api/customers/${customer.id}/payment-methods/setup`, {
      body: { provider: 'paystack', currency },
    });
    assert.equal(res.status, 201, res.text);
    const init = app.paystack.initializeCalls.at(-1)!.body as Record<string, unknown>;
    assert.deepEqual([init.currency, init.amount], [currency, res.body.verification_amount]);
    charged[currency] = res.body.verification_amount;
  }
  assert.deepEqual(charged, { NGN: 5000, GHS: 10, ZAR: 100, USD: 200 });
});

test('setup: bad input is a clear 4xx and calls no provider', async (t) => {
  const app = await setupApp(t);
  const customer = await createCustomer(app);
  const url = `/api/customers/${customer.id}/payment-methods/setup`;
  const cases: [string, unknown, number][] = [
    [url, { provider: 'paystack', currency: 'EUR' }, 400],
    [url, { provider: 'stripe', return_url: 'javascript:alert(1)' }, 400],
    [url, { provider: 'stripe', return_url: 'https://user:pw@example.com/' }, 400],
    [url, { provider: 'stripe', currency: 'U\u0000D' }, 400],
    [url, { provider: 'bitcoin' }, 400],
    [url, { extra: 1 }, 400],
    ['/api/customers/cus_01JD3Q7Z8X9Y0A1B2C3D4E5F6G/payment-methods/setup', {}, 404],
    ['/api/customers/n%C3%A9/payment-methods/setup', {}, 404],
  ];
  for (const [path, body, status] of cases) {
    const res = await app.request('POST', path, { body });
    assert.equal(res.status, status, `${JSON.stringify(body)}: ${res.text}`);
    assert.equal(typeof res.body.message, 'string');
  }
  assert.equal(app.paystack.initializeCalls.length, 0);
  assert.equal(app.stripe.sessionCalls.length, 0);
});

test('setup: a provider without an API key is 422; a provider that does not answer is 503', async (t) => {
  const app = await appWithFakeProviders(t, { STRIPE_API_KEY: '' });
  const customer = await createCustomer(app);
  const url = `/api/customers/${customer.id}/payment-methods/setup`;
  const missing = await app.request('POST', url, { body: { provider: 'stripe' } });
  assert.equal(missing.status, 422, missing.text);
  assert.equal(missing.body.code, 'invalid_state');
  app.paystack.inject('error');
  const down = await app.request('POST', url, { body: { provider: 'paystack' } });
  assert.equal(down.status, 503, down.text);
  assert.equal(down.body.details.provider, 'paystack');
});
