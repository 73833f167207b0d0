import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp } from '../../test/helpers/app.ts';
import { createSubscription } from '../../test/helpers/factories.ts';
import {
  nextSeq,
  PROVIDER_ENV,
  paystackCharge,
  postPaystack,
  postStripe,
  stripeEvent,
  stripeInvoice,
  stripePaymentIntent,
} from '../../test/helpers/provider-events.ts';

test('concurrent deliveries, each sent twice at once, take effect exactly once', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const charges = Array.from({ length: 20 }, (_, i) =>
    paystackCharge({ amount: 100 + i, email: 'same.payer@example.com' }),
  );
  const bodies = charges.map((charge) => JSON.stringify(charge));
  const results = await Promise.all([...bodies, ...bodies].map((body) => postPaystack(app, body)));
  assert.deepEqual(new Set(results.map((r) => r.status)), new Set([200]));
  const list = (await app.request('GET', '/api/payments?limit=100')).body;
  assert.equal(list.meta.total, 20);
  assert.deepEqual(
    list.data.map((p: { amount: number }) => p.amount).sort((a: number, b: number) => a - b),
    charges.map((c) => c.data.amount),
  );
  assert.equal((await app.request('GET', '/api/events?topic=payment.succeeded')).body.meta.total, 20);
  // One email, twenty concurrent first sightings: one customer.
  assert.equal((await app.request('GET', '/api/customers')).body.meta.total, 1);
  const rows = await app.deps.db.selectFrom('provider_events').select(['status', 'attempts']).execute();
  assert.equal(rows.length, 20);
  assert.ok(rows.every((row) => row.status === 'processed' && row.attempts === 1));
});

test('two event types reporting one payment at the same moment converge to one payment', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const subscriptions = await Promise.all(
    Array.from({ length: 5 }, () => createSubscription(app, { plan: { currency: 'USD', amount: 2000 } })),
  );
  const events = subscriptions.flatMap((subscription) => {
    const intent = stripePaymentIntent({ amount: 2000, email: null });
    const invoice = stripeInvoice({
      style: 'legacy',
      subscription: `sub_${nextSeq()}`,
      paymentIntent: intent.id,
      subscriptionMetadata: { subscription_id: subscription.id },
    });
    return [stripeEvent('payment_intent.succeeded', intent), stripeEvent('invoice.paid', invoice)];
  });
  const results = await Promise.all(events.map((event) => postStripe(app, event)));
  assert.deepEqual(new Set(results.map((r) => r.status)), new Set([200]));
  // A race lost on PostgreSQL is retried by the worker; run it until nothing is due.
  app.clock.advance(3_600_000);
  const { retryProviderEvents } = await import('../worker/provider-events.jobs.ts');
  while ((await retryProviderEvents.run(app.deps)) > 0) app.clock.advance(3_600_000);
  const list = (await app.request('GET', '/api/payments?limit=100')).body;
  assert.equal(list.meta.total, 5);
  for (const subscription of subscriptions) {
    const [payment] = list.data.filter((p: { subscription_id: string }) => p.subscription_id === subscription.id);
    assert.ok(payment, subscription.id);
    const after = (await app.request('GET', `/api/subscriptions/${subscription.id}`)).body;
    assert.equal(after.status, 'active');
    assert.equal(after.current_period_end.slice(0, 7), '2026-02', 'activated once');
  }
  const statuses = await app.deps.db.selectFrom('provider_events').select('status').execute();
  assert.ok(statuses.every((row) => row.status === 'processed'));
});
