// Automatic collection (SPEC §10): a renewal invoice of a customer with a saved method is
// charged by the worker, exactly once — against the fake Paystack and fake Stripe (real HTTP
// servers), on both databases.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { type TestContext, test } from 'node:test';
import { appWithFakeProviders } from '../../test/helpers/provider-apps.ts';
import { buildTestApp, connectSecondInstance, type TestApp } from '../../test/helpers/app.ts';
import { ON_POSTGRES } from '../../test/helpers/database.ts';
import { createSubscription } from '../../test/helpers/factories.ts';
import { FakePaystack } from '../../test/helpers/fake-paystack.ts';
import { FakeStripe } from '../../test/helpers/fake-stripe.ts';
import { saveTestPaymentMethod } from '../../test/helpers/payment-methods.ts';
import { PAYSTACK_SECRET } from '../../test/helpers/provider-events.ts';
import { PROVIDER_NAMES, type ProviderName } from '../shared/provider-names.ts';
import { encryptSecret } from '../shared/encryption.ts';
import { issueRenewalInvoices } from '../worker/subscriptions.jobs.ts';
import { applySuccessfulPayment } from './subscription-payments.ts';
import { chargeDueInvoices, RESOLVE_DELAY_MS } from './charges.ts';
import { DAILY_RESOLVE_DELAY_MS, MAX_RESOLVE_DELAY_MS, RESOLVE_WINDOW_MS } from './resolve-schedule.ts';
import { runWorker } from '../../test/helpers/invoice-payments.ts';
import { listInvoiceAttempts } from '../modules/payment-attempts/payment-attempts.ts';

interface Setup {
  app: TestApp;
  paystack: FakePaystack;
  stripe: FakeStripe;
  fake: FakePaystack | FakeStripe;
  subscriptionId: string;
  customerId: string;
  invoiceId: string;
}

const CURRENCY: Record<ProviderName, string> = { paystack: 'NGN', stripe: 'USD' };

/**
 * An active subscription (paid once) of a customer with a saved `provider` method, the clock
 * at its period end and its renewal invoice issued (due for a charge).
 */
async function setup(t: TestContext, provider: ProviderName, env: Record<string, string> = {}): Promise<Setup> {
  const app = await appWithFakeProviders(t, env);
  const { paystack, stripe } = app;
  paystack.webhookTarget = { url: app.baseUrl };
  stripe.webhookTarget = { url: app.baseUrl, now: () => app.clock.now() };
  const created = await createSubscription(app, { plan: { currency: CURRENCY[provider], amount: 5000 } });
  const sub = await app.deps.db.transaction().execute((trx) => applySuccessfulPayment(trx, app.deps, created.id));
  await saveTestPaymentMethod(app, sub.customer_id, provider);
  app.clock.set(new Date(sub.current_period_end!));
  assert.equal(await issueRenewalInvoices.run(app.deps), 1);
  const invoice = await app.deps.db
    .selectFrom('invoices')
    .selectAll()
    .where('subscription_id', '=', sub.id)
    .where('status', '=', 'open')
    .executeTakeFirstOrThrow();
  assert.equal(invoice.next_payment_attempt_at, app.clock.now().toISOString(), 'due for a charge at once');
  return {
    app,
    paystack,
    stripe,
    fake: provider === 'paystack' ? paystack : stripe,
    subscriptionId: sub.id,
    customerId: sub.customer_id,
    invoiceId: invoice.id,
  };
}

async function invoiceOf(s: Setup) {
  return (await s.app.request('GET', `/api/invoices/${s.invoiceId}`)).body;
}

async function paymentsOf(s: Setup) {
  return s.app.deps.db
    .selectFrom('payments')
    .selectAll()
    .where('subscription_id', '=', s.subscriptionId)
    .orderBy('created_at')
    .execute();
}

async function topicCount(s: Setup, topic: string): Promise<number> {
  const res = await s.app.request('GET', `/api/events?limit=100&topic=${topic}`);
  return res.body.data.length;
}

/** The Stripe PaymentIntent id (or Paystack reference) a charge's webhook names. */
function webhookId(s: Setup, reference: string): string {
  if (s.fake instanceof FakeStripe) return String(s.fake.intentFor(reference)!.id);
  return reference;
}

async function until(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

for (const provider of PROVIDER_NAMES) {
  test(`${provider}: a renewal invoice is charged once, paid, and the subscription renews`, async (t) => {
    const s = await setup(t, provider);
    assert.equal(await chargeDueInvoices(s.app.deps), 1);

    const [attempt] = await listInvoiceAttempts(s.app.deps.db, s.invoiceId);
    assert.ok(attempt);
    assert.equal(attempt.kind, 'charge');
    assert.equal(attempt.status, 'succeeded');
    assert.equal(attempt.locked_by, null);
    assert.equal(s.fake.chargeCount(attempt.reference), 1);
    assert.equal(s.fake.totalCharges, 1);

    const [call] = s.fake.chargeCalls;
    assert.ok(call);
    const metadata = {
      customer_id: s.customerId,
      subscription_id: s.subscriptionId,
      invoice_id: s.invoiceId,
      payment_attempt_id: attempt.id,
    };
    if (provider === 'paystack') {
      assert.equal(call.body.reference, attempt.reference);
      assert.equal(call.body.amount, 5000);
      assert.equal(call.body.currency, 'NGN');
      assert.match(String(call.body.authorization_code), /^AUTH_test/);
      assert.match(String(call.body.email), /@example\.com$/);
      assert.deepEqual(call.body.metadata, metadata);
    } else {
      assert.equal(call.headers['idempotency-key'], attempt.reference);
      assert.deepEqual(
        { ...call.body, customer: undefined, payment_method: undefined },
        {
          amount: '5000',
          currency: 'usd',
          off_session: 'true',
          confirm: 'true',
          metadata,
          customer: undefined,
          payment_method: undefined,
        },
      );
      assert.match(String(call.body.payment_method), /^pm_test/);
      assert.equal(attempt.provider_object_id, webhookId(s, attempt.reference));
    }

    const invoice = await invoiceOf(s);
    assert.equal(invoice.status, 'paid');
    assert.equal(invoice.amount_paid, 5000);
    assert.equal(invoice.next_payment_attempt_at, null);
    const payments = await paymentsOf(s);
    const charged = payments.filter((p) => p.invoice_id === s.invoiceId);
    assert.equal(charged.length, 1);
    assert.equal(charged[0]!.provider_reference, webhookId(s, attempt.reference));
    const sub = (await s.app.request('GET', `/api/subscriptions/${s.subscriptionId}`)).body;
    assert.equal(sub.status, 'active');
    assert.equal(sub.current_period_end, '2026-03-15T10:00:00.000Z');

    const events = await s.app.request('GET', '/api/events?limit=1&topic=invoice.payment_attempted');
    assert.equal(events.body.data[0].data.invoice.status, 'paid');
    assert.equal(events.body.data[0].data.attempt.id, attempt.id);
    assert.equal(events.body.data[0].data.attempt.status, 'succeeded');

    // Nothing is due any more.
    s.app.clock.advance(RESOLVE_DELAY_MS * 10);
    assert.equal(await chargeDueInvoices(s.app.deps), 0);
    assert.equal(s.fake.totalCharges, 1);
  });

  test(`${provider}: the provider's webhook after the charge's answer: still one payment, paid once`, async (t) => {
    const s = await setup(t, provider);
    await chargeDueInvoices(s.app.deps);
    const [attempt] = await listInvoiceAttempts(s.app.deps.db, s.invoiceId);
    assert.equal(await s.fake.sendChargeWebhook(webhookId(s, attempt!.reference)), 200);
    assert.equal((await paymentsOf(s)).filter((p) => p.invoice_id === s.invoiceId).length, 1);
    assert.equal((await paymentsOf(s)).length, 1, 'the first period was paid without a payment row');
    assert.equal(await topicCount(s, 'invoice.paid'), 2);
    assert.equal(await topicCount(s, 'subscription.renewed'), 1);
    const sub = (await s.app.request('GET', `/api/subscriptions/${s.subscriptionId}`)).body;
    assert.equal(sub.current_period_end, '2026-03-15T10:00:00.000Z');
  });

  test(`${provider}: the provider's webhook before the charge's answer: one payment, the attempt succeeded`, async (t) => {
    const s = await setup(t, provider);
    s.fake.hold();
    const running = chargeDueInvoices(s.app.deps);
    await until(() => s.fake.heldCount === 1, 'the held charge');
    const [pending] = await listInvoiceAttempts(s.app.deps.db, s.invoiceId);
    assert.equal(pending!.status, 'pending', 'committed before the call');
    assert.ok(pending!.locked_until);
    assert.equal(await s.fake.sendChargeWebhook(webhookId(s, pending!.reference)), 200);
    assert.equal((await invoiceOf(s)).status, 'paid', 'the webhook paid it');
    s.fake.release();
    await running;
    const [attempt] = await listInvoiceAttempts(s.app.deps.db, s.invoiceId);
    assert.equal(attempt!.status, 'succeeded');
    assert.equal((await paymentsOf(s)).filter((p) => p.invoice_id === s.invoiceId).length, 1);
    assert.equal((await paymentsOf(s)).length, 1);
    assert.equal(await topicCount(s, 'subscription.renewed'), 1);
    assert.equal(s.fake.totalCharges, 1);
  });
}

test('paystack: insufficient funds: the attempt fails with the code, the invoice stays open and counts it', async (t) => {
  const s = await setup(t, 'paystack');
  s.paystack.defaultChargeOutcome = 'insufficient_funds';
  await chargeDueInvoices(s.app.deps);
  const [attempt] = await listInvoiceAttempts(s.app.deps.db, s.invoiceId);
  assert.equal(attempt!.status, 'failed');
  assert.equal(attempt!.failure_code, 'insufficient_funds');
  assert.equal(attempt!.failure_message, 'Insufficient Funds');
  const invoice = await invoiceOf(s);
  assert.equal(invoice.status, 'open');
  assert.equal(invoice.attempt_count, 1);
  assert.equal(invoice.next_payment_attempt_at, null, 'no automatic retry (dunning decides)');
  assert.equal(await topicCount(s, 'invoice.payment_failed'), 1);
  const failed = (await paymentsOf(s)).filter((p) => p.status === 'failed');
  assert.equal(failed.length, 1);
  assert.equal(failed[0]!.provider_reference, attempt!.reference);
  // A failed payment moves the subscription as it always does (SPEC §4, §9).
  const sub = (await s.app.request('GET', `/api/subscriptions/${s.subscriptionId}`)).body;
  assert.equal(sub.status, 'past_due');
  const events = await s.app.request('GET', '/api/events?limit=1&topic=invoice.payment_attempted');
  assert.equal(events.body.data[0].data.attempt.failure_code, 'insufficient_funds');
  assert.equal(events.body.data[0].data.invoice.attempt_count, 1);
  s.app.clock.advance(RESOLVE_DELAY_MS * 10);
  assert.equal(await chargeDueInvoices(s.app.deps), 0);
  assert.equal(s.paystack.totalCharges, 1);
});

for (const outcome of ['insufficient_funds', 'authentication_required'] as const) {
  test(`stripe: a ${outcome} decline: the attempt fails with the code, one failed payment even with the webhook`, async (t) => {
    const s = await setup(t, 'stripe');
    s.stripe.defaultChargeOutcome = outcome;
    await chargeDueInvoices(s.app.deps);
    const [attempt] = await listInvoiceAttempts(s.app.deps.db, s.invoiceId);
    assert.equal(attempt!.status, 'failed');
    assert.equal(attempt!.failure_code, outcome);
    const invoice = await invoiceOf(s);
    assert.equal(invoice.status, 'open');
    assert.equal(invoice.attempt_count, 1);
    const intentId = webhookId(s, attempt!.reference);
    assert.equal(attempt!.provider_object_id, intentId);
    assert.equal(await s.stripe.sendChargeWebhook(intentId), 200);
    assert.equal((await invoiceOf(s)).attempt_count, 1, 'the webhook of the same decline counts nothing more');
    assert.equal((await paymentsOf(s)).filter((p) => p.status === 'failed').length, 1);
  });
}

test('paystack: a paused charge waits for the customer (requires_action with the link), no payment', async (t) => {
  const s = await setup(t, 'paystack');
  s.paystack.defaultChargeOutcome = 'paused';
  await chargeDueInvoices(s.app.deps);
  const [attempt] = await listInvoiceAttempts(s.app.deps.db, s.invoiceId);
  assert.equal(attempt!.status, 'requires_action');
  assert.equal(attempt!.failure_code, 'authentication_required');
  assert.match(String(attempt!.url), /^https:\/\/checkout\.paystack\.com\//);
  assert.equal(attempt!.provider_object_id, String(attempt!.url).split('/').at(-1), 'the access code');
  const invoice = await invoiceOf(s);
  assert.equal(invoice.status, 'open');
  assert.equal(invoice.attempt_count, 0);
  assert.equal(invoice.next_payment_attempt_at, null, 'not asked about again: the customer must act');
  assert.equal((await paymentsOf(s)).length, 0);
  s.app.clock.advance(RESOLVE_DELAY_MS * 10);
  assert.equal(await chargeDueInvoices(s.app.deps), 0);
  assert.deepEqual(
    s.paystack.calls.map((c) => c.path),
    ['/transaction/charge_authorization'],
    'no verify, no second charge',
  );
});

for (const provider of PROVIDER_NAMES) {
  test(`${provider}: the answer is lost (timeout): unknown, then resolved with the provider without a second charge`, async (t) => {
    const s = await setup(t, provider, { PROVIDER_TIMEOUT: '300ms' });
    s.fake.loseAnswers();
    await chargeDueInvoices(s.app.deps);
    let [attempt] = await listInvoiceAttempts(s.app.deps.db, s.invoiceId);
    assert.equal(attempt!.status, 'unknown');
    assert.equal(attempt!.failure_code, 'provider_timeout');
    assert.equal(s.fake.chargeCount(attempt!.reference), 1, 'the provider did charge');
    const invoice = await invoiceOf(s);
    assert.equal(invoice.status, 'open');
    assert.equal(invoice.attempt_count, 0);
    assert.equal(await topicCount(s, 'invoice.payment_attempted'), 0, 'no outcome yet');
    s.fake.release();

    // Not before RESOLVE_DELAY_MS.
    s.app.clock.advance(RESOLVE_DELAY_MS - 1);
    assert.equal(await chargeDueInvoices(s.app.deps), 0);
    s.app.clock.advance(1);
    assert.equal(await chargeDueInvoices(s.app.deps), 1);
    [attempt] = await listInvoiceAttempts(s.app.deps.db, s.invoiceId);
    assert.equal(attempt!.status, 'succeeded');
    assert.equal((await listInvoiceAttempts(s.app.deps.db, s.invoiceId)).length, 1, 'the same attempt');
    assert.equal(s.fake.totalCharges, 1, 'charged once');
    if (provider === 'paystack') {
      assert.ok(
        s.paystack.calls.some((c) => c.path === `/transaction/verify/${attempt!.reference}`),
        'asked first',
      );
      assert.equal(s.paystack.chargeCalls.length, 1, 'and did not charge again');
    } else {
      const [lookup, ...more] = s.stripe.intentListCalls;
      assert.equal(more.length, 0, 'asked first, by our attempt id among the customer’s PaymentIntents');
      assert.match(lookup!.path, /^\/v1\/payment_intents\?.*customer=cus_/);
      assert.equal(s.stripe.chargeCalls.length, 1, 'and did not charge again');
    }
    assert.equal((await invoiceOf(s)).status, 'paid');
    assert.equal(await topicCount(s, 'invoice.payment_attempted'), 1);
  });
}

test('paystack: a request that never reached Paystack (verify: not found) is sent again with the same reference', async (t) => {
  const s = await setup(t, 'paystack', { PROVIDER_TIMEOUT: '300ms' });
  s.paystack.queue('hang');
  await chargeDueInvoices(s.app.deps);
  let [attempt] = await listInvoiceAttempts(s.app.deps.db, s.invoiceId);
  assert.equal(attempt!.status, 'unknown');
  assert.equal(s.paystack.totalCharges, 0);
  s.app.clock.advance(RESOLVE_DELAY_MS);
  await chargeDueInvoices(s.app.deps);
  [attempt] = await listInvoiceAttempts(s.app.deps.db, s.invoiceId);
  assert.equal(attempt!.status, 'succeeded');
  assert.equal(s.paystack.chargeCount(attempt!.reference), 1);
  assert.equal(s.paystack.chargeCalls.at(-1)!.body.reference, attempt!.reference);
});

test('paystack: a look-up that proves nothing (verify refused or 500; a late duplicate reference) leaves the attempt unknown: asked again later, never charged twice', async (t) => {
  const s = await setup(t, 'paystack', { PROVIDER_TIMEOUT: '300ms' });
  s.paystack.inject('lose', { method: 'POST', path: '/transaction/charge_authorization' });
  await chargeDueInvoices(s.app.deps);
  const { reference } = (await listInvoiceAttempts(s.app.deps.db, s.invoiceId))[0]!;
  assert.equal(s.paystack.ledger.chargesWithReference(reference).length, 1, 'Paystack charged; the answer was lost');
  // Each ask waits longer (the attempt's age, at most an hour): step past the longest wait.
  const stillUnknown = async (why: string) => {
    s.app.clock.advance(MAX_RESOLVE_DELAY_MS);
    assert.equal(await chargeDueInvoices(s.app.deps), 1, why);
    const [attempt, ...others] = await listInvoiceAttempts(s.app.deps.db, s.invoiceId);
    assert.deepEqual([attempt!.status, others.length], ['unknown', 0], `${why}: ${attempt!.failure_code}`);
    assert.equal((await invoiceOf(s)).status, 'open', why);
  };
  s.paystack.queue({ status: 400, body: { status: false, message: 'Invalid key format', code: 'invalid_params' } });
  await stillUnknown('verify refused');
  s.paystack.inject('error', { method: 'GET', path: `/transaction/verify/${reference}` });
  await stillUnknown('verify answered 500');
  // Verify says 404 (not indexed yet): sent again with the same reference, which Paystack refuses as taken.
  s.paystack.queue({ status: 404, body: { status: false, message: 'Transaction reference not found' } });
  await stillUnknown('a late duplicate reference');
  assert.equal(s.paystack.chargeCalls.length, 2);

  s.app.clock.advance(MAX_RESOLVE_DELAY_MS);
  await chargeDueInvoices(s.app.deps);
  const [attempt] = await listInvoiceAttempts(s.app.deps.db, s.invoiceId);
  assert.equal(attempt!.status, 'succeeded');
  assert.equal(s.paystack.ledger.charges.length, 1, 'charged once');
  assert.equal((await invoiceOf(s)).status, 'paid');
});

for (const provider of PROVIDER_NAMES) {
  test(`${provider}: a charge left unknown while the worker was away a day: one look-up proves nothing, the worker asks daily from then, and the dunning step's charge asks first: charged once`, async (t) => {
    const s = await setup(t, provider, { PROVIDER_TIMEOUT: '300ms', DUNNING_SCHEDULE: '1h,2h' });
    const routes =
      provider === 'paystack'
        ? { charge: '/transaction/charge_authorization', lookUp: /^\/transaction\/verify\// }
        : { charge: '/v1/payment_intents', lookUp: /^\/v1\/payment_intents\?/ };
    s.fake.inject('error', { method: 'POST', path: routes.charge }); // nothing charged, a 500
    s.fake.inject('error', { method: 'GET', path: routes.lookUp });
    await runWorker(s.app.deps);
    const [started] = await listInvoiceAttempts(s.app.deps.db, s.invoiceId);
    assert.equal(started!.status, 'unknown');
    assert.equal(s.fake.calls.length, 1);

    // The next ask was due a minute later; the worker runs again only a day after the charge.
    s.app.clock.advance(RESOLVE_WINDOW_MS);
    await runWorker(s.app.deps);
    assert.equal(s.fake.calls.length, 2, 'asked once');
    const [asked, ...others] = await listInvoiceAttempts(s.app.deps.db, s.invoiceId);
    assert.deepEqual([asked!.id, asked!.status, others.length], [started!.id, 'unknown', 0]);
    let invoice = await invoiceOf(s);
    assert.equal(invoice.status, 'open');
    assert.equal(
      invoice.next_payment_attempt_at,
      new Date(s.app.clock.now().getTime() + DAILY_RESOLVE_DELAY_MS).toISOString(),
      'a day old: the worker asks once a day',
    );
    const sub = (await s.app.request('GET', `/api/subscriptions/${s.subscriptionId}`)).body;
    assert.equal(sub.status, 'past_due', 'the renewal is overdue: a dunning case chases it');

    s.app.clock.advance(MAX_RESOLVE_DELAY_MS - 1);
    await runWorker(s.app.deps);
    assert.equal(s.fake.calls.length, 2, 'not asked again before the dunning step');
    s.app.clock.advance(1);
    await runWorker(s.app.deps);
    const [resolved, ...more] = await listInvoiceAttempts(s.app.deps.db, s.invoiceId);
    assert.deepEqual([resolved!.id, resolved!.status, more.length], [started!.id, 'succeeded', 0]);
    assert.equal(s.fake.totalCharges, 1, 'charged once, with the same reference');
    assert.equal(s.fake.chargeCount(started!.reference), 1);
    invoice = await invoiceOf(s);
    assert.equal(invoice.status, 'paid');
    assert.equal((await s.app.request('GET', `/api/subscriptions/${s.subscriptionId}`)).body.status, 'active');
  });
}

test('stripe: a charge whose answer was lost, resolved 25 hours later when Stripe has forgotten the Idempotency-Key, is found by payment_attempt_id behind 150 other PaymentIntents: charged once', async (t) => {
  const s = await setup(t, 'stripe', { PROVIDER_TIMEOUT: '300ms' });
  s.stripe.inject('lose', { method: 'POST', path: '/v1/payment_intents' }); // Stripe charges; the answer is lost
  await chargeDueInvoices(s.app.deps);
  let [attempt] = await listInvoiceAttempts(s.app.deps.db, s.invoiceId);
  assert.equal(attempt!.status, 'unknown');
  const customer = String(s.stripe.chargeCalls[0]!.body.customer);
  s.stripe.seedPaymentIntents(customer, 150); // newer than ours: ours is on page 2

  s.app.clock.advance(25 * 3_600_000);
  s.stripe.expireIdempotencyKeys();
  assert.equal(await chargeDueInvoices(s.app.deps), 1);
  [attempt] = await listInvoiceAttempts(s.app.deps.db, s.invoiceId);
  assert.equal(s.stripe.ledger.charges.length, 1, 'Stripe charged once');
  assert.deepEqual(
    [attempt!.status, attempt!.provider_object_id],
    ['succeeded', s.stripe.ledger.charges[0]!.providerId],
  );
  assert.equal(s.stripe.chargeCalls.length, 1, 'POST /v1/payment_intents was not sent again');
  const pages = s.stripe.intentListCalls.map((c) => new URL(c.path, s.stripe.url).searchParams);
  assert.deepEqual(
    pages.map((q) => [q.get('customer'), q.get('limit'), q.has('starting_after')]),
    [
      [customer, '100', false],
      [customer, '100', true],
    ],
  );
  // From an hour before the attempt was made (real time, Stripe's `created`).
  const since = Number(pages[0]!.get('created[gte]')) * 1000;
  const made = Date.parse(String(s.stripe.ledger.charges[0]!.at));
  assert.ok(since <= made - 3_599_000 && since >= made - 3_700_000, `created[gte] ${since} vs ${made}`);
  assert.equal((await invoiceOf(s)).status, 'paid');
  assert.equal((await paymentsOf(s)).length, 1, 'one payment: this charge');
});

test('stripe: a look-up that proves nothing leaves the charge unknown and sends nothing; an idempotency_error is never a refusal; a proven absence charges once', async (t) => {
  const s = await setup(t, 'stripe', { PROVIDER_TIMEOUT: '300ms' });
  s.stripe.inject('timeout', { method: 'POST', path: '/v1/payment_intents' }); // nothing reaches Stripe
  await chargeDueInvoices(s.app.deps);
  const customer = String(s.stripe.chargeCalls[0]!.body.customer);
  s.stripe.seedPaymentIntents(customer, 150);
  const stillUnknown = async (why: string, sent: number) => {
    s.app.clock.advance(MAX_RESOLVE_DELAY_MS);
    assert.equal(await chargeDueInvoices(s.app.deps), 1, why);
    const [attempt, ...others] = await listInvoiceAttempts(s.app.deps.db, s.invoiceId);
    assert.deepEqual([attempt!.status, others.length], ['unknown', 0], `${why}: ${attempt!.failure_code}`);
    assert.equal(s.stripe.chargeCalls.length, sent, `${why}: POST /v1/payment_intents calls`);
    assert.equal((await invoiceOf(s)).status, 'open', why);
  };
  const list = { method: 'GET', path: '/v1/payment_intents*' };
  s.stripe.inject('error', list);
  await stillUnknown('the list answered 500', 1);
  s.stripe.inject('error', { method: 'GET', path: /starting_after=/ });
  await stillUnknown('page 2 answered 500', 1);
  s.stripe.inject({ status: 400, body: { error: { type: 'invalid_request_error', message: 'Invalid limit' } } }, list);
  await stillUnknown('the list refused', 1);
  s.stripe.inject(
    { status: 200, body: { object: 'list', url: '/v1/payment_intents', has_more: true, data: [] } },
    list,
  );
  await stillUnknown('more pages and no cursor', 1);
  // Absence proven, sent, and Stripe answers idempotency_error: money may have moved.
  s.stripe.inject(
    {
      status: 400,
      body: {
        error: {
          type: 'idempotency_error',
          message: 'Keys for idempotent requests can only be used with the same parameters they were first used with.',
        },
      },
    },
    { method: 'POST', path: '/v1/payment_intents' },
  );
  await stillUnknown('idempotency_error', 2);
  assert.equal(s.stripe.ledger.charges.length, 0);

  s.app.clock.advance(MAX_RESOLVE_DELAY_MS);
  await chargeDueInvoices(s.app.deps);
  const [attempt] = await listInvoiceAttempts(s.app.deps.db, s.invoiceId);
  assert.equal(attempt!.status, 'succeeded');
  assert.equal(s.stripe.ledger.charges.length, 1, 'charged once');
  assert.equal(s.stripe.chargeCalls.at(-1)!.headers['idempotency-key'], attempt!.reference);
  assert.equal((await invoiceOf(s)).status, 'paid');
});

test('a claimed charge is not claimed again while its lease lasts; after it, it is asked about, not re-charged', async (t) => {
  const s = await setup(t, 'paystack', { PROVIDER_TIMEOUT: '1s' });
  s.paystack.hold();
  const first = chargeDueInvoices(s.app.deps, 'worker-a');
  await until(() => s.paystack.heldCount === 1, 'the held charge');
  // A second worker at the same time finds nothing due.
  assert.equal(await chargeDueInvoices(s.app.deps, 'worker-b'), 0);
  s.paystack.loseAnswers();
  await first; // timed out: unknown
  s.paystack.release();
  s.app.clock.advance(RESOLVE_DELAY_MS);
  assert.equal(await chargeDueInvoices(s.app.deps, 'worker-b'), 1);
  assert.equal(s.paystack.totalCharges, 1);
  assert.equal((await invoiceOf(s)).status, 'paid');
});

test('an invoice of a customer without a saved method is not charged', async (t) => {
  const paystack = await FakePaystack.start(t);
  const app = await buildTestApp(t, { env: { PAYSTACK_SECRET_KEY: PAYSTACK_SECRET, PAYSTACK_API_URL: paystack.url } });
  const created = await createSubscription(app);
  const sub = await app.deps.db.transaction().execute((trx) => applySuccessfulPayment(trx, app.deps, created.id));
  app.clock.set(new Date(sub.current_period_end!));
  assert.equal(await issueRenewalInvoices.run(app.deps), 1);
  const invoice = await app.deps.db
    .selectFrom('invoices')
    .select('next_payment_attempt_at')
    .where('subscription_id', '=', sub.id)
    .where('status', '=', 'open')
    .executeTakeFirstOrThrow();
  assert.equal(invoice.next_payment_attempt_at, null);
  assert.equal(await chargeDueInvoices(app.deps), 0);
  assert.equal(paystack.calls.length, 0);
});

test(
  'two workers on PostgreSQL charging the same due invoices: one charge per invoice',
  { skip: !ON_POSTGRES },
  async (t) => {
    const s = await setup(t, 'paystack');
    s.paystack.latencyMs = 15;
    s.stripe.latencyMs = 15;
    const count = 16;
    for (let i = 1; i < count; i++) {
      const provider = i % 2 === 0 ? 'paystack' : 'stripe';
      const created = await createSubscription(s.app, { plan: { currency: CURRENCY[provider], amount: 5000 + i } });
      const sub = await s.app.deps.db
        .transaction()
        .execute((trx) => applySuccessfulPayment(trx, s.app.deps, created.id));
      await saveTestPaymentMethod(s.app, sub.customer_id, provider);
    }
    s.app.clock.set(new Date('2026-03-15T10:00:00.000Z'));
    while ((await issueRenewalInvoices.run(s.app.deps)) > 0);
    // Every open invoice is due: the 15 renewals, and the setup's subscription's (periods
    // follow the anchor, so it may have renewed more than once by now).
    const due = (await s.app.deps.db.selectFrom('invoices').select('id').where('status', '=', 'open').execute()).length;
    assert.ok(due >= count, `at least ${count} invoices due, got ${due}`);
    const second = await connectSecondInstance(s.app);
    t.after(() => second.close());
    const drain = async (deps: typeof second, owner: string) => {
      let total = 0;
      for (;;) {
        const seen = await chargeDueInvoices(deps, owner, 3);
        total += seen;
        if (seen === 0) return total;
      }
    };
    await Promise.all([drain(s.app.deps, 'worker-a'), drain(second, 'worker-b')]);
    const attempts = await s.app.deps.db.selectFrom('invoice_payment_attempts').selectAll().execute();
    assert.equal(attempts.length, due, 'one attempt per invoice');
    assert.equal(new Set(attempts.map((a) => a.invoice_id)).size, due);
    assert.ok(attempts.every((a) => a.status === 'succeeded'));
    assert.equal(s.paystack.totalCharges + s.stripe.totalCharges, due, 'one charge per invoice');
    for (const attempt of attempts) {
      const fake = attempt.provider === 'paystack' ? s.paystack : s.stripe;
      assert.equal(fake.chargeCount(attempt.reference), 1);
    }
    const open = await s.app.deps.db.selectFrom('invoices').select('id').where('status', '=', 'open').execute();
    assert.deepEqual(open, []);
  },
);

/** Makes method `id`'s stored credential one no configured key opens (saved under a lost key). */
async function loseKeyOf(app: TestApp, id: string): Promise<void> {
  const stored = encryptSecret(randomBytes(32), 'AUTH_saved_under_a_lost_key');
  await app.deps.db.updateTable('payment_methods').set({ credential: stored }).where('id', '=', id).execute();
}

test('a saved method no configured key decrypts fails its own charge alone; the rest of the batch is charged', async (t) => {
  const app = await appWithFakeProviders(t);
  const customers: { provider: ProviderName; readable: boolean; subscriptionId: string }[] = [];
  for (const [provider, readable] of [
    ['paystack', true],
    ['paystack', false],
    ['stripe', true],
    ['stripe', false],
    ['paystack', true],
  ] as const) {
    const created = await createSubscription(app, { plan: { currency: CURRENCY[provider], amount: 5000 } });
    const sub = await app.deps.db.transaction().execute((trx) => applySuccessfulPayment(trx, app.deps, created.id));
    const method = await saveTestPaymentMethod(app, sub.customer_id, provider);
    if (!readable) await loseKeyOf(app, method.id);
    customers.push({ provider, readable, subscriptionId: sub.id });
  }
  app.clock.set(new Date('2026-02-15T10:00:00.000Z'));
  assert.equal(await issueRenewalInvoices.run(app.deps), 5);

  assert.equal(await chargeDueInvoices(app.deps), 5, 'one batch, nothing thrown');

  for (const customer of customers) {
    const invoice = await app.deps.db
      .selectFrom('invoices')
      .select(['id', 'status', 'next_payment_attempt_at'])
      .where('subscription_id', '=', customer.subscriptionId)
      .orderBy('created_at', 'desc')
      .executeTakeFirstOrThrow();
    const [attempt, ...more] = await listInvoiceAttempts(app.deps.db, invoice.id);
    assert.equal(more.length, 0);
    if (customer.readable) {
      assert.equal(invoice.status, 'paid', `${customer.provider}: charged`);
      assert.equal(attempt!.status, 'succeeded');
      continue;
    }
    assert.equal(invoice.status, 'open');
    assert.equal(invoice.next_payment_attempt_at, null, 'not tried again every run');
    assert.equal(attempt!.status, 'failed');
    assert.equal(attempt!.failure_code, 'payment_method_unreadable');
    assert.match(String(attempt!.failure_message), /cannot be decrypted with any of DATA_ENCRYPTION_KEYS/);
    assert.ok(!String(attempt!.failure_message).includes('AUTH_'), 'no secret in the message');
    const events = await app.request('GET', '/api/events?limit=100&topic=invoice.payment_attempted');
    const event = events.body.data.find((e: { data: { invoice: { id: string } } }) => e.data.invoice.id === invoice.id);
    assert.equal(event?.data.attempt.failure_code, 'payment_method_unreadable');
  }
  assert.equal(app.paystack.totalCharges, 2, 'only the readable Paystack methods reached Paystack');
  assert.equal(app.stripe.totalCharges, 1, 'only the readable Stripe method reached Stripe');
  assert.ok(app.paystack.chargeCalls.every((call) => call.body.authorization_code !== 'AUTH_saved_under_a_lost_key'));
  app.clock.advance(RESOLVE_DELAY_MS * 10);
  assert.equal(await chargeDueInvoices(app.deps), 0, 'nothing due again');
});
