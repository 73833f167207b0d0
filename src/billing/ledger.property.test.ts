// The ledger property (SPEC §10 "Exactly once"): random histories of API refunds (retried with
// the same Idempotency-Key or not, over-refunds included), automatic renewal charges and
// dunning retries, provider webhooks delivered in any order and twice, lost answers, 500s and
// timeouts at the fake providers, pages of the account's other refunds, and a worker killed
// right after a provider call — against the fake Paystack and Stripe, whose ledgers record
// every charge and refund they made. After each history (faults cleared, every event
// delivered, the resolvers run) the provider's ledger must equal ours: each refund of ours is
// at most one refund at the provider, each invoice is charged successfully at most once, each
// successful charge is one payment of ours, every payment's `amount_refunded` is what the
// provider refunded on it, and no request was answered with a 500.
//
// One app and one pair of fakes per database, fresh customers per history. Runs
// LEDGER_PROPERTY_RUNS histories per database (default 100); a failure prints fast-check's
// seed and path, and LEDGER_PROPERTY_SEED=<seed> replays it (with LEDGER_PROPERTY_PATH=<path>,
// from the failing history on; LEDGER_PROPERTY_SHRINK=1 also shrinks it to a smallest failing
// history). A seed replays the same run: time is the injected clock, the pages of other refunds
// are the same for every history, and only injected faults time out. An injected timeout or
// lost answer ends the client's call at once (test/helpers/provider-deadlines.ts: once no other
// call waits for an answer) instead of waiting PROVIDER_TIMEOUT out; every call also keeps that
// real-time deadline: 300 ms here, far above the fakes' local answers (none came late in 100
// histories at a load of 15); a process stalled longer turns an answer into a timeout, which
// the property must survive too, but then the run is not quite its seed's.
// LEDGER_PROPERTY_TIMEOUT=1s replays with margin.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import test from 'node:test';
import fc from 'fast-check';
import type { TestResponse } from '../../test/helpers/app.ts';
import { createCustomer, createPlan } from '../../test/helpers/factories.ts';
import { FakePaystack, type PaystackChargeOutcome } from '../../test/helpers/fake-paystack.ts';
import type { Fault, FaultTarget, LedgerRefund } from '../../test/helpers/fake-provider.ts';
import type { FakeStripe, StripeChargeOutcome } from '../../test/helpers/fake-stripe.ts';
import { saveTestPaymentMethod } from '../../test/helpers/payment-methods.ts';
import { appWithFakeProviders, type FakeProviders } from '../../test/helpers/provider-apps.ts';
import type { TestApp } from '../../test/helpers/app.ts';
import {
  paystackCharge,
  postPaystack,
  postStripe,
  stripeEvent,
  stripePaymentIntent,
} from '../../test/helpers/provider-events.ts';
import type { Deps } from '../deps.ts';
import { JOBS } from '../worker/jobs.ts';
import { Worker } from '../worker/runner.ts';
import { PROVIDER_NAMES, type ProviderName } from '../shared/provider-names.ts';

const RUNS = Number(process.env.LEDGER_PROPERTY_RUNS ?? 100);
const SEED = process.env.LEDGER_PROPERTY_SEED === undefined ? undefined : Number(process.env.LEDGER_PROPERTY_SEED);
const PATH = process.env.LEDGER_PROPERTY_PATH;
const TIMEOUT = process.env.LEDGER_PROPERTY_TIMEOUT ?? '300ms';

type App = TestApp & FakeProviders;
type Provider = ProviderName;
type Outcome = 'success' | 'decline' | 'action';
type Route = 'refund' | 'lookup' | 'charge' | 'verify';

type Step =
  /** POST /api/payments/{id}/refund: `share` percent of the payment (over 100: more than paid), or all. */
  | { kind: 'refund'; account: number; payment: number; share: number | null; key: 'new' | 'again' | 'none' }
  /** The next `times` calls to `route` at the account's provider get `fault`. */
  | { kind: 'fault'; account: number; route: Route; fault: Fault; times: number }
  /**
   * The clock moves `ms` (a charge's or refund's resume, a dunning step) and the worker runs;
   * `kill`: it dies after its first provider call; `race`: a client retries a refund meanwhile;
   * `forget`: Stripe forgets every Idempotency-Key first (as it does after 24 hours).
   */
  | { kind: 'tick'; ms: number; kill: boolean; race: boolean; forget: boolean }
  /** The clock reaches the account's period end (a renewal invoice, charged) and the worker runs. */
  | { kind: 'renew'; account: number; kill: boolean }
  /** One provider webhook of what the fakes did, chosen by `pick`, delivered once or twice at once; a refund's first delivery decides it. */
  | { kind: 'deliver'; pick: number; twice: boolean; fail: boolean };

interface History {
  accounts: Provider[];
  /** What the charges answer, in order (then success). */
  outcomes: Outcome[];
  steps: Step[];
}

const PAYSTACK_OUTCOME: Record<Outcome, PaystackChargeOutcome> = {
  success: 'success',
  decline: 'insufficient_funds',
  action: 'paused',
};
const STRIPE_OUTCOME: Record<Outcome, StripeChargeOutcome> = {
  success: 'succeeded',
  decline: 'insufficient_funds',
  action: 'authentication_required',
};
const PAYSTACK_ROUTES: Record<Route, FaultTarget> = {
  refund: { method: 'POST', path: '/refund' },
  lookup: { method: 'GET', path: '/refund*' },
  charge: { method: 'POST', path: '/transaction/charge_authorization' },
  verify: { method: 'GET', path: /^\/transaction\/verify\// },
};
// Stripe's look-ups: the PaymentIntent's refunds, the customer's PaymentIntents (every page).
const STRIPE_ROUTES: Record<Route, FaultTarget> = {
  refund: { method: 'POST', path: '/v1/refunds' },
  lookup: { method: 'GET', path: '/v1/refunds*' },
  charge: { method: 'POST', path: '/v1/payment_intents' },
  verify: { method: 'GET', path: '/v1/payment_intents*' },
};
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

// Histories that once failed, run first every time. A renewal charge killed after Stripe
// declined it, its look-up then failing: the attempt stayed unknown on an open invoice that
// no dunning case chases (the next renewal's decline opened the case), and the worker had
// stopped asking after a day.
const REGRESSIONS: History[] = [
  {
    accounts: ['stripe'],
    outcomes: ['decline', 'action'],
    steps: [
      { kind: 'renew', account: 0, kill: true },
      { kind: 'refund', account: 0, payment: 0, share: 126, key: 'again' },
      { kind: 'fault', account: 1, route: 'verify', fault: 'error', times: 1 },
      { kind: 'renew', account: 0, kill: false },
      { kind: 'renew', account: 1, kill: true },
      { kind: 'refund', account: 1, payment: 0, share: null, key: 'none' },
      { kind: 'refund', account: 0, payment: 2, share: 58, key: 'again' },
    ],
  },
];

function history(): fc.Arbitrary<History> {
  const account = fc.nat(1);
  const kill = fc.oneof({ weight: 3, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) });
  const step: fc.Arbitrary<Step> = fc.oneof(
    {
      weight: 4,
      arbitrary: fc.record({
        kind: fc.constant('refund' as const),
        account,
        payment: fc.nat(3),
        share: fc.option(fc.integer({ min: 1, max: 130 }), { freq: 4 }),
        key: fc.constantFrom('new' as const, 'again' as const, 'again' as const, 'none' as const),
      }),
    },
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant('fault' as const),
        account,
        route: fc.constantFrom<Route>('refund', 'refund', 'lookup', 'charge', 'charge', 'verify'),
        fault: fc.constantFrom<Fault>('lose', 'lose-error', 'lose-error', 'error', 'timeout'),
        times: fc.integer({ min: 1, max: 2 }),
      }),
    },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant('tick' as const),
        ms: fc.constantFrom(MINUTE + 1000, HOUR + 1000),
        kill,
        race: fc.boolean(),
        forget: fc.oneof({ weight: 3, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
      }),
    },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('renew' as const), account, kill }) },
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant('deliver' as const),
        pick: fc.nat(),
        twice: fc.boolean(),
        fail: fc.oneof({ weight: 6, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
      }),
    },
  );
  return fc
    .record({
      accounts: fc.array(fc.constantFrom(...PROVIDER_NAMES), { minLength: 1, maxLength: 2 }),
      outcomes: fc.array(fc.constantFrom<Outcome>('success', 'decline', 'decline', 'action'), { maxLength: 3 }),
      steps: fc.array(step, { minLength: 1, maxLength: 8 }),
      renewAt: fc.nat(8),
      kill,
    })
    .map(({ accounts, outcomes, steps, renewAt, kill }) => {
      // Every history renews its first account once at least: a charge to be exactly once about.
      const at = Math.min(renewAt, steps.length);
      return {
        accounts,
        outcomes,
        steps: [...steps.slice(0, at), { kind: 'renew' as const, account: 0, kill }, ...steps.slice(at)],
      };
    });
}

/** A customer of one history: a daily subscription at one provider, its first invoice paid there. */
interface Account {
  provider: Provider;
  customerId: string;
  subscriptionId: string;
  /** The provider's reference of the first invoice's payment (Paystack reference, Stripe `pi_…`). */
  firstPayment: string;
}

/** What one history did: its accounts, its requests' keys, the webhooks decided. */
interface Run {
  app: App;
  accounts: Account[];
  /** Idempotency-Keys used, with the body each was sent with. */
  keys: { key: string; paymentId: string; body: Record<string, unknown>; refundId: string | null }[];
  /** Refund events already decided: `<provider>:<refund id>` → succeeded or not. */
  refundOutcomes: Map<string, boolean>;
  /** Webhooks delivered (`charge:…` / `refund:…`). */
  delivered: Set<string>;
}

/** A request that must never be answered 5xx but 503 (a provider without a usable answer). */
function noServerError(res: TestResponse, what: string): TestResponse {
  assert.ok(res.status < 500 || res.status === 503, `${what} answered ${res.status}: ${res.text}`);
  return res;
}

function fakeOf(app: App, provider: Provider): FakePaystack | FakeStripe {
  return provider === 'paystack' ? app.paystack : app.stripe;
}

/**
 * The deps of a worker process that dies right after its first provider call of this run:
 * from then on every use of the database throws (nothing it learnt is recorded).
 */
function dyingDeps(app: App): Deps {
  const calls = () => app.paystack.calls.length + app.stripe.calls.length;
  const before = calls();
  const db = new Proxy(app.deps.db, {
    get(target, property) {
      if (calls() > before) throw new Error('worker killed');
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { ...app.deps, db };
}

/** One worker tick over every job (SPEC §7); `kill`: the worker dies after its first provider call. */
async function runWorker(app: App, kill: boolean): Promise<void> {
  const failures: unknown[] = [];
  const log = { error: (object: { err?: unknown }) => failures.push(object.err) };
  await new Worker(kill ? dyingDeps(app) : app.deps, JOBS, log).runOnce();
  for (const failure of failures) {
    if (kill && failure instanceof Error && failure.message === 'worker killed') continue;
    throw failure instanceof Error ? failure : new Error(String(failure));
  }
}

async function openAccount(app: App, provider: Provider, plans: Record<Provider, string>): Promise<Account> {
  const customer = await createCustomer(app);
  const created = await app.request('POST', '/api/subscriptions', {
    body: { customer_id: customer.id, plan_id: plans[provider] },
  });
  assert.equal(created.status, 201, created.text);
  const invoices = await app.request('GET', `/api/invoices?subscription_id=${created.body.id}`);
  const invoice = invoices.body.data[0];
  // The customer pays the first invoice at the provider (a refundable payment); the saved
  // method is what renewals and dunning retries charge.
  const metadata = { customer_id: customer.id, subscription_id: created.body.id, invoice_id: invoice.id };
  const at = app.clock.now();
  let firstPayment: string;
  if (provider === 'paystack') {
    const charge = paystackCharge({ amount: invoice.amount_due, currency: 'NGN', metadata });
    Object.assign(charge.data, { paid_at: at.toISOString(), created_at: at.toISOString() });
    firstPayment = charge.data.reference;
    app.paystack.paid(firstPayment, invoice.amount_due, 'NGN');
    assert.equal(noServerError(await postPaystack(app, charge), 'notify').status, 200);
  } else {
    const seconds = Math.floor(at.getTime() / 1000);
    const intent = { ...stripePaymentIntent({ amount: invoice.amount_due, metadata }), created: seconds };
    firstPayment = intent.id;
    app.stripe.paid(intent.id, invoice.amount_due, 'usd');
    const event = { ...stripeEvent('payment_intent.succeeded', intent), created: seconds };
    assert.equal(noServerError(await postStripe(app, event), 'notify').status, 200);
  }
  await saveTestPaymentMethod(app, customer.id, provider);
  return { provider, customerId: customer.id, subscriptionId: created.body.id, firstPayment };
}

interface OurPayment {
  id: string;
  provider: Provider;
  provider_reference: string;
  amount: number;
  amount_refunded: number;
  status: string;
}

async function paymentsOf(run: Run, account: Account): Promise<OurPayment[]> {
  const res = await run.app.request('GET', `/api/payments?customer_id=${account.customerId}&limit=100`);
  assert.equal(res.status, 200, res.text);
  return res.body.data as OurPayment[];
}

async function invoiceIdsOf(run: Run, account: Account): Promise<string[]> {
  const res = await run.app.request('GET', `/api/invoices?subscription_id=${account.subscriptionId}&limit=100`);
  assert.equal(res.status, 200, res.text);
  return (res.body.data as { id: string }[]).map((invoice) => invoice.id);
}

async function refund(run: Run, step: Extract<Step, { kind: 'refund' }>): Promise<void> {
  const account = run.accounts[step.account % run.accounts.length]!;
  const earlier = run.keys;
  let paymentId: string;
  let body: Record<string, unknown>;
  let key: string | undefined;
  if (step.key === 'again' && earlier.length > 0) {
    // The same request again (a client retrying after a 503 or a lost answer).
    const again = earlier[step.payment % earlier.length]!;
    ({ paymentId, body, key } = again);
  } else {
    const payments = await paymentsOf(run, account);
    if (payments.length === 0) return;
    const payment = payments[step.payment % payments.length]!;
    paymentId = payment.id;
    body = step.share === null ? {} : { amount: Math.max(1, Math.round((payment.amount * step.share) / 100)) };
    key = step.key === 'none' ? undefined : randomUUID();
  }
  const res = noServerError(
    await run.app.request('POST', `/api/payments/${paymentId}/refund`, {
      body,
      headers: key ? { 'idempotency-key': key } : undefined,
    }),
    'refund',
  );
  assert.ok([202, 409, 422, 503].includes(res.status), `refund answered ${res.status}: ${res.text}`);
  const refundId: string | null =
    res.status === 202 ? res.body.id : res.status === 503 ? (res.body.details?.refund_id ?? null) : null;
  if (key === undefined) return;
  const known = run.keys.find((k) => k.key === key);
  if (!known) run.keys.push({ key, paymentId, body, refundId });
  else if (known.refundId !== null && refundId !== null) {
    assert.equal(refundId, known.refundId, 'a retry with the same Idempotency-Key is the same refund');
  } else if (refundId !== null) known.refundId = refundId;
}

function inject(run: Run, step: Extract<Step, { kind: 'fault' }>): void {
  const { provider } = run.accounts[step.account % run.accounts.length]!;
  const target = (provider === 'paystack' ? PAYSTACK_ROUTES : STRIPE_ROUTES)[step.route];
  fakeOf(run.app, provider).inject(step.fault, target, step.times);
}

async function renew(run: Run, step: Extract<Step, { kind: 'renew' }>): Promise<void> {
  const account = run.accounts[step.account % run.accounts.length]!;
  const sub = (await run.app.request('GET', `/api/subscriptions/${account.subscriptionId}`)).body;
  const end = new Date(sub.current_period_end).getTime();
  if (end > run.app.clock.now().getTime()) run.app.clock.set(new Date(end));
  await runWorker(run.app, step.kill);
}

/** A webhook the fakes would send about what they did for this history. */
interface Webhook {
  id: string;
  send: (fail: boolean) => Promise<number>;
}

/** True when a charge's metadata names a customer of this history. */
function isOurs(run: Run, metadata: unknown): boolean {
  const customer = (metadata as { customer_id?: unknown } | null | undefined)?.customer_id;
  return run.accounts.some((account) => account.customerId === customer);
}

/** The charges the fakes made for this history's invoices, with the provider's reference of each payment. */
function chargesOf(run: Run) {
  const { paystack, stripe } = run.app;
  return [
    ...paystack.ledger.charges.flatMap((charge) => {
      const tx = paystack.transactions.get(charge.reference ?? '');
      return tx && isOurs(run, tx.metadata)
        ? [{ provider: 'paystack' as const, charge, payment: tx.reference, metadata: tx.metadata }]
        : [];
    }),
    ...stripe.ledger.charges.flatMap((charge) => {
      const intent = stripe.intents.get(charge.providerId);
      return intent && isOurs(run, intent.metadata)
        ? [{ provider: 'stripe' as const, charge, payment: charge.providerId, metadata: intent.metadata }]
        : [];
    }),
  ];
}

/** Every webhook the fakes would send about what they did for this history. */
function webhooksOf(run: Run): Webhook[] {
  const { app } = run;
  const hooks: Webhook[] = [];
  const payments = new Set(run.accounts.map((account) => account.firstPayment));
  for (const { provider, charge, payment } of chargesOf(run)) {
    payments.add(payment);
    if (provider === 'paystack') {
      // Paystack sends charge.success; a declined or paused charge sends nothing here.
      if (charge.status !== 'success') continue;
      hooks.push({ id: `charge:paystack:${payment}`, send: () => app.paystack.sendChargeWebhook(payment) });
    } else {
      hooks.push({ id: `charge:stripe:${payment}`, send: () => app.stripe.sendChargeWebhook(payment) });
    }
  }
  for (const provider of PROVIDER_NAMES) {
    for (const made of fakeOf(app, provider).ledger.refunds) {
      if (made.preExisting || !payments.has(made.payment)) continue;
      const id = `refund:${provider}:${made.providerId}`;
      hooks.push({
        id,
        send: (fail) => {
          // A refund's first event decides it; a redelivery says the same.
          const succeeded = run.refundOutcomes.get(id) ?? !fail;
          run.refundOutcomes.set(id, succeeded);
          return provider === 'paystack'
            ? app.paystack.sendRefundEvent(app.baseUrl, Number(made.providerId), succeeded ? 'processed' : 'failed')
            : app.stripe.sendRefundEvent(
                app.baseUrl,
                made.providerId,
                succeeded ? 'succeeded' : 'failed',
                Math.floor(app.clock.now().getTime() / 1000),
              );
        },
      });
    }
  }
  return hooks;
}

async function deliver(run: Run, hook: Webhook, twice: boolean, fail: boolean): Promise<void> {
  const statuses = await Promise.all(twice ? [hook.send(fail), hook.send(fail)] : [hook.send(fail)]);
  for (const status of statuses) assert.equal(status, 200, `${hook.id}: notify answered ${status}`);
  run.delivered.add(hook.id);
}

/** Our refunds of the history's payments, and its invoices' charge attempts still unresolved. */
async function unsettled(run: Run): Promise<{ refunds: number; attempts: number }> {
  const { db } = run.app.deps;
  const customers = run.accounts.map((a) => a.customerId);
  const refunds = await db
    .selectFrom('refunds')
    .innerJoin('payments', 'payments.id', 'refunds.payment_id')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('payments.customer_id', 'in', customers)
    .where('refunds.status', '=', 'pending')
    .executeTakeFirstOrThrow();
  const attempts = await db
    .selectFrom('invoice_payment_attempts')
    .innerJoin('invoices', 'invoices.id', 'invoice_payment_attempts.invoice_id')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('invoices.customer_id', 'in', customers)
    // An attempt whose invoice was paid by the provider's webhook meanwhile is never asked
    // about again (only open invoices are charged): it moves no money.
    .where('invoices.status', '=', 'open')
    .where('invoice_payment_attempts.status', 'in', ['pending', 'unknown'])
    .executeTakeFirstOrThrow();
  return { refunds: Number(refunds.n), attempts: Number(attempts.n) };
}

/**
 * When the worker next asks about an unresolved charge of the run's customers (ms), or null:
 * its invoice's next ask on the resolve backoff, or — once the worker has stopped asking on
 * its own, the attempt a day old (SPEC §10 "Outcomes") — the next step of the invoice's open
 * dunning case, whose charge asks once more.
 */
async function nextAskedAbout(run: Run): Promise<number | null> {
  const customers = run.accounts.map((a) => a.customerId);
  const unresolved = (qb: typeof run.app.deps.db) =>
    qb
      .selectFrom('invoices')
      .innerJoin('invoice_payment_attempts', 'invoice_payment_attempts.invoice_id', 'invoices.id')
      .where('invoices.customer_id', 'in', customers)
      .where('invoices.status', '=', 'open')
      .where('invoice_payment_attempts.status', 'in', ['pending', 'unknown']);
  const { db } = run.app.deps;
  const asked = await unresolved(db)
    .select((eb) => eb.fn.min('invoices.next_payment_attempt_at').as('due'))
    .executeTakeFirst();
  const step = await unresolved(db)
    .innerJoin('dunning_cases', 'dunning_cases.invoice_id', 'invoices.id')
    .where('dunning_cases.status', '=', 'open')
    .select((eb) => eb.fn.min('dunning_cases.next_action_at').as('due'))
    .executeTakeFirst();
  const times = [asked?.due, step?.due].flatMap((due) => (typeof due === 'string' ? [Date.parse(due)] : []));
  return times.length === 0 ? null : Math.min(...times);
}

/**
 * The end of a history: no more faults; the clock moves past every lease and resume time and
 * the worker runs; every webhook of what the fakes did is delivered. Until nothing is left
 * to resolve or deliver.
 */
async function settle(run: Run): Promise<void> {
  const { app } = run;
  app.paystack.clearFaults();
  app.stripe.clearFaults();
  for (let round = 0; ; round++) {
    assert.ok(round < 10, `settled within 10 rounds: ${JSON.stringify(await unsettled(run))}`);
    app.clock.advance(2 * MINUTE + 2 * app.deps.config.providerTimeoutMs);
    // An unknown charge is asked about again on a backoff of up to an hour, or a day old at a
    // dunning step (the renewal went past due meanwhile): go there.
    const due = await nextAskedAbout(run);
    if (due !== null && due > app.clock.now().getTime()) app.clock.set(new Date(due));
    await runWorker(app, false);
    const hooks = webhooksOf(run).filter((hook) => !run.delivered.has(hook.id));
    for (const hook of hooks) await deliver(run, hook, false, false);
    const left = await unsettled(run);
    if (hooks.length === 0 && left.refunds === 0 && left.attempts === 0) return;
  }
}

/** The provider's ledger equals ours (see the header). */
async function checkLedger(run: Run): Promise<void> {
  const { app } = run;
  for (const account of run.accounts) {
    const fake = fakeOf(app, account.provider);
    const payments = await paymentsOf(run, account);
    const invoiceIds = new Set(await invoiceIdsOf(run, account));

    // Each invoice: at most one successful charge at the provider; each one, a payment of ours.
    const charged = new Map<string, string[]>();
    for (const { provider, charge, payment, metadata } of chargesOf(run)) {
      const invoiceId = (metadata as { invoice_id?: string } | null | undefined)?.invoice_id;
      if (provider !== account.provider || invoiceId === undefined || !invoiceIds.has(invoiceId)) continue;
      if (charge.status !== 'success' && charge.status !== 'succeeded') continue;
      charged.set(invoiceId, [...(charged.get(invoiceId) ?? []), payment]);
      const ours = payments.filter((p) => p.provider_reference === payment);
      assert.equal(ours.length, 1, `the provider's charge ${payment} is one payment of ours`);
      assert.equal(ours[0]!.amount, charge.amount, `charge ${payment}: amount`);
      assert.notEqual(ours[0]!.status, 'failed', `charge ${payment}: succeeded`);
    }
    for (const [invoiceId, references] of charged) {
      assert.equal(references.length, 1, `invoice ${invoiceId} charged once, not ${references.join(', ')}`);
    }
    // And no money of ours the provider did not take.
    const taken = new Set([account.firstPayment, ...[...charged.values()].flat()]);
    for (const payment of payments) {
      if (payment.status !== 'failed') assert.ok(taken.has(payment.provider_reference), `payment ${payment.id} taken`);
    }

    for (const payment of payments) {
      const rows = await app.deps.db
        .selectFrom('refunds')
        .select(['id', 'status', 'amount'])
        .where('payment_id', '=', payment.id)
        .execute();
      const ids = new Set(rows.map((row) => row.id));
      // Each refund of ours: at most one refund at the provider.
      for (const row of rows) {
        const made = fake.ledger.refundsWithMarker(row.id);
        assert.ok(made.length <= 1, `refund ${row.id} made ${made.length} times at the provider`);
        assert.notEqual(row.status, 'pending', `refund ${row.id} settled`);
      }
      // Each refund at the provider: one of ours asked for it; the sums agree.
      const theirs = fake.ledger.refundsOn(payment.provider_reference);
      const succeeded = (made: LedgerRefund) => {
        const status =
          fake instanceof FakePaystack
            ? fake.refunds.get(Number(made.providerId))?.status
            : app.stripe.refunds.get(made.providerId)?.status;
        return status === 'processed' || status === 'succeeded';
      };
      let refunded = 0;
      for (const made of theirs) {
        assert.ok(made.marker !== null && ids.has(made.marker), `provider refund ${made.providerId} is one of ours`);
        if (succeeded(made)) refunded += made.amount;
      }
      // One for one, amount and outcome: every refund of ours but a refused one is a refund at
      // the provider. Paystack's events name neither refund (an event settles the oldest
      // pending refund of its amount), so they are compared as a multiset.
      const ofOurs = rows
        .filter((row) => row.status !== 'failed' || fake.ledger.refundsWithMarker(row.id).length > 0)
        .map((row) => `${row.amount} ${row.status === 'succeeded' ? 'succeeded' : 'failed'}`);
      const ofTheirs = theirs.map((made) => `${made.amount} ${succeeded(made) ? 'succeeded' : 'failed'}`);
      assert.deepEqual(ofOurs.sort(), ofTheirs.sort(), `payment ${payment.id}: our refunds are the provider's`);
      assert.equal(payment.amount_refunded, refunded, `payment ${payment.id}: amount_refunded = the provider's`);
      assert.ok(refunded <= payment.amount, `payment ${payment.id}: refunded within the amount`);
    }
  }
}

/** Stops a history's subscriptions and open invoices, so later histories' clock moves leave them be. */
async function close(run: Run): Promise<void> {
  for (const account of run.accounts) {
    noServerError(await run.app.request('PUT', `/api/subscriptions/${account.subscriptionId}/cancel`), 'cancel');
    const open = await run.app.request('GET', `/api/invoices?subscription_id=${account.subscriptionId}&status=open`);
    for (const { id } of open.body.data as { id: string }[]) {
      noServerError(await run.app.request('POST', `/api/invoices/${id}/void`), 'void');
    }
  }
}

test('the fake providers’ ledgers equal ours after any history of refunds, charges, retries, webhooks and faults', async (t) => {
  // Long enough that only an injected fault times out (see the header); the clock moves in
  // steps this short time fits in (a refund's lease is PROVIDER_TIMEOUT and a minute).
  const app = await appWithFakeProviders(t, {
    PROVIDER_TIMEOUT: TIMEOUT,
    DUNNING_SCHEDULE: '1h,2h',
  });
  app.paystack.webhookTarget = { url: app.baseUrl };
  app.stripe.webhookTarget = { url: app.baseUrl, now: () => app.clock.now() };
  const plans = {
    paystack: (await createPlan(app, { amount: 5000, currency: 'NGN', interval: 'day' })).id as string,
    stripe: (await createPlan(app, { amount: 5000, currency: 'USD', interval: 'day' })).id as string,
  };
  // A busy Paystack account: more than 10 pages of other refunds in every look-up's window
  // (Paystack's real time, from a minute before the refund was made). Dated anew as each
  // history starts, every earlier refund an hour back: each window holds those 1050 and the
  // history's own, so a seed gives the same pages however fast the machine is.
  const busy = new Set(app.paystack.seedRefunds(1050));

  await fc.assert(
    fc.asyncProperty(history(), async (h) => {
      app.paystack.redateRefunds(busy);
      for (const fake of [app.paystack, app.stripe]) fake.clearFaults();
      app.paystack.chargeOutcomes.splice(0, Infinity, ...h.outcomes.map((o) => PAYSTACK_OUTCOME[o]));
      app.stripe.chargeOutcomes.splice(0, Infinity, ...h.outcomes.map((o) => STRIPE_OUTCOME[o]));
      const accounts: Account[] = [];
      for (const provider of h.accounts) accounts.push(await openAccount(app, provider, plans));
      const run: Run = { app, accounts, keys: [], refundOutcomes: new Map(), delivered: new Set() };
      for (const step of h.steps) {
        switch (step.kind) {
          case 'refund':
            await refund(run, step);
            break;
          case 'fault':
            inject(run, step);
            break;
          case 'tick': {
            app.clock.advance(step.ms);
            if (step.forget) app.stripe.expireIdempotencyKeys();
            const retry = { kind: 'refund', account: 0, payment: 0, share: null, key: 'again' } as const;
            await Promise.all([runWorker(app, step.kill), step.race ? refund(run, retry) : undefined]);
            break;
          }
          case 'renew':
            await renew(run, step);
            break;
          case 'deliver': {
            const hooks = webhooksOf(run);
            if (hooks.length > 0) await deliver(run, hooks[step.pick % hooks.length]!, step.twice, step.fail);
            break;
          }
        }
      }
      await settle(run);
      await checkLedger(run);
      await close(run);
    }),
    {
      numRuns: RUNS,
      seed: SEED,
      path: PATH,
      endOnFailure: process.env.LEDGER_PROPERTY_SHRINK !== '1',
      examples: SEED === undefined ? REGRESSIONS.map((h) => [h]) : [],
    },
  );
});
