// SPEC §10 "Exactly once": a worker that dies after sending a charge leaves its attempt
// `pending`. When the invoice is then paid — by the provider's event for that very charge, or
// by any other payment — the attempt is finished in the same transaction, no later worker
// charges the invoice again, and the dead worker's answer, recorded late, changes nothing
// more (or records the money when the provider charged after all). Fake Paystack and Stripe
// (real HTTP servers), both databases.
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { appWithFakeProviders } from '../../test/helpers/provider-apps.ts';
import { createSubscription } from '../../test/helpers/factories.ts';
import { FakeStripe } from '../../test/helpers/fake-stripe.ts';
import { saveTestPaymentMethod } from '../../test/helpers/payment-methods.ts';
import { PROVIDER_NAMES, type ProviderName } from '../shared/provider-names.ts';
import { issueRenewalInvoices } from '../worker/subscriptions.jobs.ts';
import { applySuccessfulPayment } from './subscription-payments.ts';
import {
  callProviderForCharge,
  chargeDueInvoices,
  chargeLeaseMs,
  claimCharges,
  RESOLVE_DELAY_MS,
  recordChargeResult,
} from './charges.ts';
import { listInvoiceAttempts } from '../modules/payment-attempts/payment-attempts.ts';

const CURRENCY: Record<ProviderName, string> = { paystack: 'NGN', stripe: 'USD' };

/** An active subscription with a saved `provider` method and its renewal invoice due for a charge. */
async function setup(t: TestContext, provider: ProviderName) {
  const app = await appWithFakeProviders(t);
  const fake = provider === 'paystack' ? app.paystack : app.stripe;
  app.paystack.webhookTarget = { url: app.baseUrl };
  app.stripe.webhookTarget = { url: app.baseUrl, now: () => app.clock.now() };
  const created = await createSubscription(app, { plan: { currency: CURRENCY[provider], amount: 5000 } });
  const sub = await app.deps.db.transaction().execute((trx) => applySuccessfulPayment(trx, app.deps, created.id));
  await saveTestPaymentMethod(app, sub.customer_id, provider);
  app.clock.set(new Date(sub.current_period_end!));
  assert.equal(await issueRenewalInvoices.run(app.deps), 1);
  const invoice = await app.deps.db
    .selectFrom('invoices')
    .select('id')
    .where('subscription_id', '=', sub.id)
    .where('status', '=', 'open')
    .executeTakeFirstOrThrow();
  return { app, fake, invoiceId: invoice.id };
}

type Setup = Awaited<ReturnType<typeof setup>>;

/** A worker claims the invoice and sends the charge, then dies: its answer is never recorded. */
async function chargeThenDie(s: Setup) {
  const { claimed } = await claimCharges(s.app.deps, 'worker-that-dies', 10);
  assert.equal(claimed.length, 1);
  const charge = claimed[0]!;
  const result = await callProviderForCharge(s.app.deps, charge);
  assert.equal(result.kind, 'succeeded', 'the provider charged');
  const [attempt] = await listInvoiceAttempts(s.app.deps.db, s.invoiceId);
  assert.equal(attempt!.status, 'pending');
  return { charge, result };
}

/** The PaymentIntent id (Stripe) or reference (Paystack) the charge's event names. */
function webhookId(s: Setup, reference: string): string {
  return s.fake instanceof FakeStripe ? String(s.fake.intentFor(reference)!.id) : reference;
}

async function attemptEvents(s: Setup) {
  const res = await s.app.request('GET', '/api/events?limit=100&topic=invoice.payment_attempted');
  return res.body.data.map((event: any) => ({
    invoice: event.data.invoice.status,
    attempt: event.data.attempt.status,
  }));
}

/** After the dead worker's lease and long after: the worker finds nothing to charge. */
async function laterWorkersChargeNothing(s: Setup) {
  s.app.clock.advance(chargeLeaseMs(s.app.deps.config) + RESOLVE_DELAY_MS * 10);
  assert.equal(await chargeDueInvoices(s.app.deps, 'worker-after'), 0);
  assert.equal(s.fake.totalCharges, 1, 'charged once');
}

for (const provider of PROVIDER_NAMES) {
  test(`${provider}: the charge's own event pays the invoice while its worker is dead: the attempt succeeds, and nothing is charged again`, async (t) => {
    const s = await setup(t, provider);
    const { charge, result } = await chargeThenDie(s);
    assert.equal(await s.fake.sendChargeWebhook(webhookId(s, charge.attempt.reference)), 200);

    const invoice = (await s.app.request('GET', `/api/invoices/${s.invoiceId}`)).body;
    assert.equal(invoice.status, 'paid');
    const [attempt] = invoice.payment_attempts;
    assert.deepEqual(
      { status: attempt.status, failure_code: attempt.failure_code, object: attempt.provider_object_id },
      {
        status: 'succeeded',
        failure_code: null,
        object: provider === 'stripe' ? webhookId(s, charge.attempt.reference) : null,
      },
    );
    const row = (await listInvoiceAttempts(s.app.deps.db, s.invoiceId))[0]!;
    assert.deepEqual({ by: row.locked_by, until: row.locked_until }, { by: null, until: null }, 'lease given back');
    assert.deepEqual(await attemptEvents(s), [{ invoice: 'paid', attempt: 'succeeded' }]);

    await laterWorkersChargeNothing(s);
    // The dead worker comes back and records its answer: nothing more happens.
    await recordChargeResult(s.app.deps, charge, result);
    const payments = await s.app.deps.db.selectFrom('payments').select('invoice_id').execute();
    assert.deepEqual(
      payments.map((p) => p.invoice_id),
      [s.invoiceId],
    );
    assert.equal((await attemptEvents(s)).length, 1);
  });

  test(`${provider}: another payment pays the invoice while the charge's worker is dead: the attempt is closed, nothing is charged again, and a late success is recorded`, async (t) => {
    const s = await setup(t, provider);
    const { charge, result } = await chargeThenDie(s);
    const paid = await s.app.request('POST', `/api/invoices/${s.invoiceId}/pay`, { body: { paid_out_of_band: true } });
    assert.equal(paid.status, 200);
    assert.equal(paid.body.status, 'paid');

    let [attempt] = await listInvoiceAttempts(s.app.deps.db, s.invoiceId);
    assert.deepEqual(
      { status: attempt!.status, failure_code: attempt!.failure_code, by: attempt!.locked_by },
      { status: 'failed', failure_code: 'invoice_paid', by: null },
    );
    assert.deepEqual(await attemptEvents(s), [{ invoice: 'paid', attempt: 'failed' }]);

    await laterWorkersChargeNothing(s);
    // The worker was only slow: its answer says the provider charged. The money is recorded.
    await recordChargeResult(s.app.deps, charge, result);
    [attempt] = await listInvoiceAttempts(s.app.deps.db, s.invoiceId);
    assert.equal(attempt!.status, 'succeeded');
    const charged = await s.app.deps.db
      .selectFrom('payments')
      .select('id')
      .where('provider', '=', provider)
      .where('provider_reference', '=', webhookId(s, charge.attempt.reference))
      .execute();
    assert.equal(charged.length, 1);
    assert.equal(s.fake.totalCharges, 1);
  });
}
