// Dunning retries (SPEC §10 "Dunning retries"): each DUNNING_SCHEDULE step first charges the
// saved default method again and sends `dunning.reminder` only when that charge failed; a
// charge that needs the customer stops automatic charges of the invoice. Against the fake
// Paystack and fake Stripe (real HTTP servers), with the worker's own tick, on both databases.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { type TestContext, test } from 'node:test';
import fc from 'fast-check';
import { appWithFakeProviders } from '../../../test/helpers/provider-apps.ts';
import { connectSecondInstance, type TestApp } from '../../../test/helpers/app.ts';
import { ON_POSTGRES } from '../../../test/helpers/database.ts';
import { createSubscription } from '../../../test/helpers/factories.ts';
import { FakePaystack, type PaystackChargeOutcome } from '../../../test/helpers/fake-paystack.ts';
import type { FakeStripe } from '../../../test/helpers/fake-stripe.ts';
import { type StripeChargeOutcome } from '../../../test/helpers/fake-stripe.ts';
import { reportPayment, runWorker } from '../../../test/helpers/invoice-payments.ts';
import { saveTestPaymentMethod } from '../../../test/helpers/payment-methods.ts';
import { PROVIDER_NAMES, type ProviderName } from '../../shared/provider-names.ts';
import { encryptSecret } from '../../shared/encryption.ts';
import { listInvoiceAttempts } from '../payment-attempts/payment-attempts.ts';
import { applySuccessfulPayment } from '../../billing/subscription-payments.ts';
import { RETRY_WAIT_MS } from '../../billing/dunning-steps.ts';

// DUNNING_RETRY_PROPERTY_RUNS histories per database (default 12); DUNNING_RETRY_PROPERTY_SEED replays one.
const RUNS = Number(process.env.DUNNING_RETRY_PROPERTY_RUNS ?? 12);
const SEED =
  process.env.DUNNING_RETRY_PROPERTY_SEED === undefined ? undefined : Number(process.env.DUNNING_RETRY_PROPERTY_SEED);
const DAY = 24 * 3_600_000;
/** The default DUNNING_SCHEDULE `1d,3d,7d,14d`; the final action 7 days after the last step. */
const STEP_DAYS = [1, 3, 7, 14];
const FINAL_DAY = 21;
const CURRENCY: Record<ProviderName, string> = { paystack: 'NGN', stripe: 'USD' };
const DECLINE: Record<ProviderName, PaystackChargeOutcome & StripeChargeOutcome> = {
  paystack: 'insufficient_funds',
  stripe: 'insufficient_funds',
};

interface Setup {
  app: TestApp;
  paystack: FakePaystack;
  stripe: FakeStripe;
  fake: FakePaystack | FakeStripe;
  subscriptionId: string;
  invoiceId: string;
  /** When the dunning case opened (ms since epoch): the renewal charge's decline. */
  openedAt: number;
}

/**
 * An active subscription of a customer with a saved `provider` method (`withMethod`), whose
 * renewal invoice's automatic charge was declined by the worker: the subscription is
 * `past_due` with an open case chasing the invoice. Later charges answer `outcomes`, then
 * decline.
 */
async function setup(
  t: TestContext,
  provider: ProviderName,
  outcomes: string[],
  options: { withMethod?: boolean; env?: Record<string, string>; extra?: number; renewal?: string } = {},
): Promise<Setup> {
  const app = await appWithFakeProviders(t, options.env);
  const { paystack, stripe } = app;
  const fake = provider === 'paystack' ? paystack : stripe;
  const created = await createSubscription(app, { plan: { currency: CURRENCY[provider], amount: 5000 } });
  const sub = await app.deps.db.transaction().execute((trx) => applySuccessfulPayment(trx, app.deps, created.id));
  if (options.withMethod !== false) await saveTestPaymentMethod(app, sub.customer_id, provider);
  // More subscriptions in the same state (same period end), for the concurrency test.
  for (let i = 0; i < (options.extra ?? 0); i++) {
    const other = await createSubscription(app, { plan: { currency: CURRENCY[provider], amount: 5000 } });
    const paid = await app.deps.db.transaction().execute((trx) => applySuccessfulPayment(trx, app.deps, other.id));
    await saveTestPaymentMethod(app, paid.customer_id, provider);
  }
  if (fake instanceof FakePaystack) {
    fake.chargeOutcomes.push(
      (options.renewal as PaystackChargeOutcome | undefined) ?? DECLINE.paystack,
      ...(outcomes as PaystackChargeOutcome[]),
    );
    fake.defaultChargeOutcome = DECLINE.paystack;
  } else {
    fake.chargeOutcomes.push(
      (options.renewal as StripeChargeOutcome | undefined) ?? DECLINE.stripe,
      ...(outcomes as StripeChargeOutcome[]),
    );
    fake.defaultChargeOutcome = DECLINE.stripe;
  }
  app.clock.set(new Date(sub.current_period_end!));
  if (options.withMethod === false) {
    // Nothing charges it: the renewal is overdue after RENEWAL_GRACE (1 h), and a case opens.
    await runWorker(app.deps);
    app.clock.advance(3_600_000);
  }
  await runWorker(app.deps);
  const invoice = await app.deps.db
    .selectFrom('invoices')
    .selectAll()
    .where('subscription_id', '=', sub.id)
    .where('status', '=', 'open')
    .executeTakeFirstOrThrow();
  const invoiceId = invoice.id;
  const sCase = await caseOf({ app, subscriptionId: sub.id });
  assert.equal(sCase.status, 'open');
  assert.equal(sCase.invoice_id, invoiceId);
  assert.equal((await subscriptionOf({ app, subscriptionId: sub.id })).status, 'past_due');
  return {
    app,
    paystack,
    stripe,
    fake,
    subscriptionId: sub.id,
    invoiceId,
    openedAt: new Date(sCase.opened_at).getTime(),
  };
}

async function caseOf(s: Pick<Setup, 'app' | 'subscriptionId'>) {
  const res = await s.app.request('GET', '/api/dunning/cases?status=all&limit=100');
  const cases = res.body.data.filter((c: { subscription_id: string }) => c.subscription_id === s.subscriptionId);
  assert.equal(cases.length, 1, 'one case');
  return cases[0];
}

async function subscriptionOf(s: Pick<Setup, 'app' | 'subscriptionId'>) {
  return (await s.app.request('GET', `/api/subscriptions/${s.subscriptionId}`)).body;
}

async function invoiceOf(s: Setup) {
  return (await s.app.request('GET', `/api/invoices/${s.invoiceId}`)).body;
}

/** Every event of the given topics, oldest first, with its data parsed. */
async function eventsOf(s: Setup, topics: string[]) {
  const rows = await s.app.deps.db
    .selectFrom('events')
    .select(['id', 'topic', 'data'])
    .where('topic', 'in', topics)
    .orderBy('id')
    .execute();
  return rows.map((r) => ({ id: r.id, topic: r.topic, data: JSON.parse(r.data) }));
}

async function reminders(s: Setup) {
  return (await eventsOf(s, ['dunning.reminder'])).map((e) => e.data);
}

/** Moves the clock to step `index` (0-based) of the schedule and runs one worker tick. */
async function runStep(s: Setup, index: number) {
  s.app.clock.set(new Date(s.openedAt + STEP_DAYS[index]! * DAY));
  return runWorker(s.app.deps);
}

async function hostedUrl(s: Setup): Promise<string> {
  const url = (await invoiceOf(s)).hosted_invoice_url as string;
  assert.match(url, /\/i\/[\w-]+$/);
  return url;
}

for (const provider of PROVIDER_NAMES) {
  test(`${provider}: a retry that succeeds on the 2nd step pays the invoice, recovers the case, reactivates the subscription; no reminder for that step`, async (t) => {
    const s = await setup(t, provider, [DECLINE[provider], provider === 'paystack' ? 'success' : 'succeeded']);
    assert.equal(s.fake.chargeCalls.length, 1, 'the renewal charge');

    await runStep(s, 0);
    assert.equal(s.fake.chargeCalls.length, 2, 'step 1 charged once');
    assert.equal((await reminders(s)).length, 1, 'step 1 failed: its reminder');
    assert.equal((await caseOf(s)).step, 1);

    await runStep(s, 1);
    assert.equal(s.fake.chargeCalls.length, 3, 'step 2 charged once');
    const invoice = await invoiceOf(s);
    assert.equal(invoice.status, 'paid');
    assert.equal(invoice.amount_paid, 5000);
    const recovered = await caseOf(s);
    assert.equal(recovered.status, 'recovered');
    assert.equal(recovered.step, 1, 'no reminder for step 2');
    assert.equal((await reminders(s)).length, 1);
    assert.equal((await eventsOf(s, ['dunning.recovered'])).length, 1);
    const sub = await subscriptionOf(s);
    assert.equal(sub.status, 'active');
    const attempts = await listInvoiceAttempts(s.app.deps.db, s.invoiceId);
    assert.deepEqual(
      attempts.map((a) => a.status),
      ['failed', 'failed', 'succeeded'],
    );
    const payments = await s.app.deps.db
      .selectFrom('payments')
      .select(['status', 'invoice_id'])
      .where('subscription_id', '=', s.subscriptionId)
      .where('status', '=', 'succeeded')
      .execute();
    assert.deepEqual(
      payments.map((p) => ({ ...p })),
      [{ status: 'succeeded', invoice_id: s.invoiceId }],
      'one payment',
    );

    // Nothing more: no step, no charge, no final action.
    for (const index of [2, 3]) await runStep(s, index);
    s.app.clock.set(new Date(s.openedAt + FINAL_DAY * DAY));
    await runWorker(s.app.deps);
    assert.equal(s.fake.chargeCalls.length, 3);
    assert.equal((await reminders(s)).length, 1);
    assert.equal((await subscriptionOf(s)).status, 'active');
  });

  test(`${provider}: each failed retry is recorded, then its step's reminder carries the hosted invoice URL and the charge; the final action charges nothing`, async (t) => {
    const s = await setup(t, provider, []);
    const url = await hostedUrl(s);
    for (const [index] of STEP_DAYS.entries()) {
      const before = s.fake.chargeCalls.length;
      await runStep(s, index);
      assert.equal(s.fake.chargeCalls.length, before + 1, `step ${index + 1}: one charge`);
      await runWorker(s.app.deps);
      assert.equal(s.fake.chargeCalls.length, before + 1, `step ${index + 1}: charged once`);
      const sent = await reminders(s);
      assert.equal(sent.length, index + 1, `step ${index + 1}: one reminder`);
      const reminder = sent.at(-1)!;
      const attempts = await listInvoiceAttempts(s.app.deps.db, s.invoiceId);
      assert.equal(attempts.length, index + 2);
      const attempt = attempts.at(-1)!;
      assert.equal(attempt.status, 'failed');
      assert.equal(attempt.failure_code, 'insufficient_funds');
      assert.equal(reminder.step, index + 1);
      assert.equal(reminder.final, index === STEP_DAYS.length - 1);
      assert.equal(reminder.hosted_invoice_url, url);
      assert.equal(reminder.action_url, null);
      assert.deepEqual(reminder.charge, {
        attempt_id: attempt.id,
        status: 'failed',
        failure_code: 'insufficient_funds',
        failure_message: attempt.failure_message,
      });
      // The attempt's outcome, then the reminder, in one transaction (the reminder after).
      const ordered = await eventsOf(s, ['invoice.payment_attempted', 'dunning.reminder']);
      const last = ordered.slice(-2);
      assert.deepEqual(
        last.map((e) => e.topic),
        ['invoice.payment_attempted', 'dunning.reminder'],
      );
      assert.equal(last[0]!.data.attempt.id, attempt.id);
      const current = await caseOf(s);
      assert.equal(current.step, index + 1);
      const nextDay = STEP_DAYS[index + 1] ?? FINAL_DAY;
      assert.equal(current.next_action_at, new Date(s.openedAt + nextDay * DAY).toISOString());
    }
    assert.equal((await invoiceOf(s)).attempt_count, 1 + STEP_DAYS.length);
    const charges = s.fake.chargeCalls.length;
    s.app.clock.set(new Date(s.openedAt + FINAL_DAY * DAY));
    await runWorker(s.app.deps);
    await runWorker(s.app.deps);
    assert.equal(s.fake.chargeCalls.length, charges, 'the final action charges nothing');
    assert.equal((await caseOf(s)).status, 'exhausted');
    assert.equal((await subscriptionOf(s)).status, 'cancelled');
    assert.equal((await invoiceOf(s)).status, 'uncollectible');
  });
}

test('stripe: an authentication_required decline stops automatic charges; its reminder links the hosted invoice page', async (t) => {
  const s = await setup(t, 'stripe', ['authentication_required']);
  const url = await hostedUrl(s);
  await runStep(s, 0);
  assert.equal(s.stripe.chargeCalls.length, 2);
  const [attempt] = (await listInvoiceAttempts(s.app.deps.db, s.invoiceId)).slice(-1);
  assert.equal(attempt!.status, 'failed');
  assert.equal(attempt!.failure_code, 'authentication_required');
  const [reminder] = await reminders(s);
  assert.equal(reminder.step, 1);
  assert.equal(reminder.hosted_invoice_url, url);
  assert.equal(reminder.action_url, url, 'Stripe gives no page: the hosted invoice page (its Pay button)');
  assert.equal(reminder.charge.failure_code, 'authentication_required');
  assert.equal(reminder.charge.status, 'failed');
  const row = await s.app.deps.db
    .selectFrom('invoices')
    .select(['charges_stopped_at', 'next_payment_attempt_at'])
    .where('id', '=', s.invoiceId)
    .executeTakeFirstOrThrow();
  assert.equal(row.charges_stopped_at, s.app.clock.now().toISOString());
  assert.equal(row.next_payment_attempt_at, null);

  // Later steps: the reminder at once, no charge.
  for (const index of [1, 2, 3]) {
    await runStep(s, index);
    await runWorker(s.app.deps);
  }
  assert.equal(s.stripe.chargeCalls.length, 2, 'never charged automatically again');
  const sent = await reminders(s);
  assert.deepEqual(
    sent.map((r) => [r.step, r.charge, r.action_url, r.hosted_invoice_url]),
    [
      [1, reminder.charge, url, url],
      [2, null, null, url],
      [3, null, null, url],
      [4, null, null, url],
    ],
  );
  assert.equal((await caseOf(s)).step, 4);
});

test('stripe: a renewal charge declined for authentication_required is never retried by dunning', async (t) => {
  const s = await setup(t, 'stripe', [], { renewal: 'authentication_required' });
  const row = await s.app.deps.db
    .selectFrom('invoices')
    .select('charges_stopped_at')
    .where('id', '=', s.invoiceId)
    .executeTakeFirstOrThrow();
  assert.equal(row.charges_stopped_at, new Date(s.openedAt).toISOString());
  await runStep(s, 0);
  await runWorker(s.app.deps);
  assert.equal(s.stripe.chargeCalls.length, 1, 'only the renewal charge');
  const [reminder] = await reminders(s);
  assert.equal(reminder.step, 1);
  assert.equal(reminder.charge, null);
});

test('paystack: a paused charge (authorization_url) stops automatic charges; the reminder carries the link', async (t) => {
  const s = await setup(t, 'paystack', ['paused']);
  const url = await hostedUrl(s);
  await runStep(s, 0);
  assert.equal(s.paystack.chargeCalls.length, 2);
  const attempt = (await listInvoiceAttempts(s.app.deps.db, s.invoiceId)).at(-1)!;
  assert.equal(attempt.status, 'requires_action');
  assert.match(String(attempt.url), /^https:\/\/checkout\.paystack\.com\//);
  const [reminder] = await reminders(s);
  assert.equal(reminder.step, 1);
  assert.equal(reminder.action_url, attempt.url, "Paystack's page");
  assert.equal(reminder.hosted_invoice_url, url);
  assert.deepEqual(reminder.charge, {
    attempt_id: attempt.id,
    status: 'requires_action',
    failure_code: 'authentication_required',
    failure_message: attempt.failure_message,
  });
  assert.equal((await invoiceOf(s)).attempt_count, 1, 'a paused charge is no failed payment');
  for (const index of [1, 2]) {
    await runStep(s, index);
    await runWorker(s.app.deps);
  }
  assert.equal(s.paystack.chargeCalls.length, 2, 'never charged automatically again');
  assert.deepEqual(
    (await reminders(s)).map((r) => [r.step, r.charge?.status ?? null]),
    [
      [1, 'requires_action'],
      [2, null],
      [3, null],
    ],
  );
  // The customer completes the charge on Paystack's page: its charge.success for the attempt's
  // reference pays the invoice and recovers the case.
  const paid = await reportPayment(s.app, {
    subscriptionId: s.subscriptionId,
    invoiceId: s.invoiceId,
    amount: 5000,
    reference: attempt.reference,
  });
  assert.equal(paid.status, 200);
  assert.equal((await invoiceOf(s)).status, 'paid');
  assert.equal((await caseOf(s)).status, 'recovered');
  assert.equal((await subscriptionOf(s)).status, 'active');
});

test('without a saved method a step sends its reminder at once (hosted invoice URL, no charge)', async (t) => {
  const s = await setup(t, 'paystack', [], { withMethod: false });
  await runStep(s, 0);
  assert.equal(s.paystack.calls.length, 0);
  const [reminder] = await reminders(s);
  assert.equal(reminder.step, 1);
  assert.equal(reminder.charge, null);
  assert.equal(reminder.action_url, null);
  assert.equal(reminder.hosted_invoice_url, await hostedUrl(s));
  assert.equal((await caseOf(s)).step, 1);
});

test('a retry without an answer: the reminder waits RETRY_WAIT_MS, goes out unanswered, and a later success still recovers', async (t) => {
  const s = await setup(t, 'paystack', ['success'], { env: { PROVIDER_TIMEOUT: '300ms' } });
  s.paystack.loseAnswers();
  t.after(() => s.paystack.release());
  await runStep(s, 0);
  assert.equal(s.paystack.chargeCalls.length, 2, 'the retry reached Paystack');
  const attempt = (await listInvoiceAttempts(s.app.deps.db, s.invoiceId)).at(-1)!;
  assert.equal(attempt.status, 'unknown');
  assert.deepEqual(await reminders(s), [], 'the reminder waits for the outcome');
  const waiting = await caseOf(s);
  assert.equal(waiting.step, 0);
  assert.equal(waiting.next_action_at, new Date(s.app.clock.now().getTime() + RETRY_WAIT_MS).toISOString());

  // Paystack stays silent for the whole wait.
  s.app.clock.advance(RETRY_WAIT_MS - 1);
  await runWorker(s.app.deps);
  assert.deepEqual(await reminders(s), []);
  s.app.clock.advance(1);
  await runWorker(s.app.deps);
  const [reminder] = await reminders(s);
  assert.equal(reminder.step, 1);
  assert.deepEqual(reminder.charge, {
    attempt_id: null,
    status: 'unanswered',
    failure_code: null,
    failure_message: null,
  });
  assert.equal(s.paystack.chargeCount(attempt.reference), 1, 'asked about, never charged again');

  // Paystack answers at last: the charge succeeded; the case recovers, no second reminder.
  s.paystack.release();
  s.app.clock.advance(RETRY_WAIT_MS);
  await runWorker(s.app.deps);
  assert.equal((await invoiceOf(s)).status, 'paid');
  assert.equal((await caseOf(s)).status, 'recovered');
  assert.equal((await reminders(s)).length, 1);
  assert.equal(s.paystack.chargeCount(attempt.reference), 1);
});

test("a step's charge that cannot be made (the provider's key is gone) sends the reminder at once", async (t) => {
  const s = await setup(t, 'stripe', []);
  // The worker runs without STRIPE_API_KEY from now on: the saved Stripe method cannot be charged.
  const deps = { ...s.app.deps, providers: { ...s.app.deps.providers, stripe: undefined } };
  s.app.clock.set(new Date(s.openedAt + DAY));
  await runWorker(deps);
  assert.equal(s.stripe.chargeCalls.length, 1, 'only the renewal charge');
  const [reminder] = await reminders(s);
  assert.equal(reminder.step, 1);
  assert.equal(reminder.charge, null);
  const row = await s.app.deps.db
    .selectFrom('dunning_cases')
    .select(['retry_requested_at', 'next_action_at'])
    .where('invoice_id', '=', s.invoiceId)
    .executeTakeFirstOrThrow();
  assert.equal(row.retry_requested_at, null);
  assert.equal(row.next_action_at, new Date(s.openedAt + 3 * DAY).toISOString());
});

test("a step's charge of a saved method no configured key decrypts fails alone: failed attempt, reminder at once, next step tries again", async (t) => {
  const s = await setup(t, 'paystack', []);
  const invoice = await s.app.deps.db
    .selectFrom('invoices')
    .select('customer_id')
    .where('id', '=', s.invoiceId)
    .executeTakeFirstOrThrow();
  await s.app.deps.db
    .updateTable('payment_methods')
    .set({ credential: encryptSecret(randomBytes(32), 'AUTH_saved_under_a_lost_key') })
    .where('customer_id', '=', invoice.customer_id)
    .execute();
  await runStep(s, 0);
  assert.equal(s.paystack.chargeCalls.length, 1, 'only the renewal charge reached Paystack');
  const attempt = (await listInvoiceAttempts(s.app.deps.db, s.invoiceId)).at(-1)!;
  assert.equal(attempt.status, 'failed');
  assert.equal(attempt.failure_code, 'payment_method_unreadable');
  const [reminder] = await reminders(s);
  assert.equal(reminder.step, 1);
  assert.deepEqual(reminder.charge, {
    attempt_id: attempt.id,
    status: 'failed',
    failure_code: 'payment_method_unreadable',
    failure_message: attempt.failure_message,
  });
  assert.equal(reminder.action_url, null);
  assert.equal((await invoiceOf(s)).attempt_count, 1, 'no payment was attempted at the provider');
  // Not stopped: the next step asks again (listing the key back would make it chargeable).
  await runStep(s, 1);
  assert.equal((await listInvoiceAttempts(s.app.deps.db, s.invoiceId)).length, 3);
  assert.deepEqual(
    (await reminders(s)).map((r) => [r.step, r.charge?.failure_code]),
    [
      [1, 'payment_method_unreadable'],
      [2, 'payment_method_unreadable'],
    ],
  );
});

test('a failed retry whose record fails (its reminder cannot be written) rolls back whole: asked about after the lease, not charged again, one reminder', async (t) => {
  const s = await setup(t, 'paystack', []);
  const sCase = await caseOf(s);
  // A step row already present makes the reminder's insert fail inside the charge's record.
  await s.app.deps.db
    .insertInto('dunning_steps')
    .values({ case_id: sCase.id, step: 1, final: false, event_id: 'evt_x', taken_at: sCase.opened_at })
    .execute();
  await assert.rejects(runStep(s, 0), /worker job failed/);
  const [, pending] = await listInvoiceAttempts(s.app.deps.db, s.invoiceId);
  assert.equal(pending!.status, 'pending', 'nothing of the outcome was recorded');
  assert.equal(s.paystack.chargeCount(pending!.reference), 1);
  assert.deepEqual(await reminders(s), []);
  assert.equal((await invoiceOf(s)).attempt_count, 1, 'the failed payment rolled back too');

  await s.app.deps.db.deleteFrom('dunning_steps').where('case_id', '=', sCase.id).execute();
  s.app.clock.advance(2 * s.app.deps.config.providerTimeoutMs);
  await runWorker(s.app.deps);
  const [, attempt] = await listInvoiceAttempts(s.app.deps.db, s.invoiceId);
  assert.equal(attempt!.id, pending!.id);
  assert.equal(attempt!.status, 'failed');
  assert.ok(
    s.paystack.calls.some((c) => c.path === `/transaction/verify/${attempt!.reference}`),
    'asked first',
  );
  assert.equal(s.paystack.chargeCount(attempt!.reference), 1, 'not charged again');
  assert.equal(s.paystack.chargeCalls.length, 2);
  const sent = await reminders(s);
  assert.equal(sent.length, 1);
  assert.equal(sent[0].charge.attempt_id, attempt!.id);
  assert.equal((await invoiceOf(s)).attempt_count, 2);
  await runWorker(s.app.deps);
  assert.equal((await reminders(s)).length, 1);
});

test('two workers on PostgreSQL: one charge and one reminder per step and case', { skip: !ON_POSTGRES }, async (t) => {
  const s = await setup(t, 'paystack', [], { extra: 7 });
  s.paystack.latencyMs = 15;
  const second = await connectSecondInstance(s.app);
  t.after(() => second.close());
  const invoices = await s.app.deps.db
    .selectFrom('invoices')
    .select('id')
    .where('status', '=', 'open')
    .where('charges_stopped_at', 'is', null)
    .execute();
  assert.equal(invoices.length, 8);
  for (const index of [0, 1]) {
    s.app.clock.set(new Date(s.openedAt + STEP_DAYS[index]! * DAY));
    await Promise.all([runWorker(s.app.deps), runWorker(second), runWorker(s.app.deps), runWorker(second)]);
    for (const { id } of invoices) {
      const attempts = await listInvoiceAttempts(s.app.deps.db, id);
      assert.equal(attempts.length, index + 2, 'one charge per step');
      for (const attempt of attempts) assert.equal(s.paystack.chargeCount(attempt.reference), 1);
    }
    const sent = await reminders(s);
    assert.equal(sent.length, 8 * (index + 1), 'one reminder per step and case');
    assert.equal(new Set(sent.map((r) => `${r.id}:${r.step}`)).size, sent.length);
  }
});

/** What the provider answers each retry, per provider (all the fakes can say). */
const ANSWERS = {
  paystack: ['success', 'insufficient_funds', 'paused'],
  stripe: ['succeeded', 'insufficient_funds', 'authentication_required'],
} as const;

test('property: whatever each retry answers, every step charges at most once and reminds at most once, and nothing is charged after an answer that needs the customer', async (t) => {
  const histories = fc.oneof(
    ...PROVIDER_NAMES.map((provider) =>
      fc.record({
        provider: fc.constant(provider),
        answers: fc.array(fc.constantFrom(...ANSWERS[provider]), {
          minLength: STEP_DAYS.length,
          maxLength: STEP_DAYS.length,
        }),
      }),
    ),
  );
  await fc.assert(
    fc.asyncProperty(histories, async ({ provider, answers }) => {
      const s = await setup(t, provider, [...answers]);
      // The model: what each step should do.
      let charges = 1;
      let stopped = false;
      let recovered = false;
      const expected: [number, string | null][] = [];
      const queue = [...answers];
      for (const [index] of STEP_DAYS.entries()) {
        await runStep(s, index);
        await runWorker(s.app.deps);
        if (recovered) continue;
        if (stopped) {
          expected.push([index + 1, null]);
          continue;
        }
        const answer = queue.shift()!;
        charges += 1;
        if (answer === 'success' || answer === 'succeeded') {
          recovered = true;
          continue;
        }
        expected.push([index + 1, answer === 'paused' ? 'requires_action' : 'failed']);
        if (answer === 'paused' || answer === 'authentication_required') stopped = true;
      }
      s.app.clock.set(new Date(s.openedAt + FINAL_DAY * DAY));
      await runWorker(s.app.deps);
      await runWorker(s.app.deps);

      assert.equal(s.fake.chargeCalls.length, charges, 'one charge per retrying step');
      const sent = await reminders(s);
      assert.deepEqual(
        sent.map((r) => [r.step, r.charge?.status ?? null]),
        expected,
        'one reminder per step that did not recover, carrying its charge',
      );
      for (const reminder of sent) {
        if (reminder.charge?.attempt_id) {
          const attempt = (await listInvoiceAttempts(s.app.deps.db, s.invoiceId)).find(
            (a) => a.id === reminder.charge.attempt_id,
          );
          assert.ok(attempt, 'the reminder names a recorded attempt');
          assert.equal(s.fake.chargeCount(attempt.reference), 1);
        }
      }
      const finalCase = await caseOf(s);
      assert.equal(finalCase.status, recovered ? 'recovered' : 'exhausted');
      assert.equal(finalCase.step, expected.length);
      assert.equal((await invoiceOf(s)).status, recovered ? 'paid' : 'uncollectible');
      assert.equal((await subscriptionOf(s)).status, recovered ? 'active' : 'cancelled');
    }),
    { numRuns: RUNS, seed: SEED },
  );
});
