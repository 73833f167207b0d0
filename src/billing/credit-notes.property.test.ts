// The credit notes property (SPEC §14): random histories of invoices, payments (whole or in
// part, at Paystack or Stripe), credit notes (any amount — over the invoice's total too — and
// any split, refunds included), faults at the provider's refund route (an answer lost after
// the refund was made, a 500, a timeout), the worker resuming refunds, the provider's refund
// events delivered twice, adjustments through the ledger and voids — against the fake
// Paystack and Stripe, whose ledgers record every refund they made. After each history (faults
// cleared, the resolver run until every refund has its provider's answer):
// - each customer's balance is the sum of its ledger, never below 0, and the ledger's credit
//   note entries are the notes' credit (less the voided notes' reversals);
// - no invoice's non-void credit notes exceed its total, and its pre-/post-payment credit note
//   totals and `amount_due` are what its notes say;
// - every refund a credit note asked for is exactly one refund at its provider, and every
//   refund the provider made carrying our id is one of ours; no request answered 500.
// One app per database, fresh customers per history; CREDIT_NOTE_PROPERTY_RUNS histories
// (default 50), CREDIT_NOTE_PROPERTY_SEED=<seed> replays one.
import assert from 'node:assert/strict';
import test from 'node:test';
import fc from 'fast-check';
import type { TestApp, TestResponse } from '../../test/helpers/app.ts';
import { createCustomer, createPlan } from '../../test/helpers/factories.ts';
import type { Fault } from '../../test/helpers/fake-provider.ts';
import { issueTestInvoice } from '../../test/helpers/invoices.ts';
import { invoiceById } from '../../test/helpers/invoice-payments.ts';
import { appWithFakeProviders, type FakeProviders } from '../../test/helpers/provider-apps.ts';
import {
  paystackCharge,
  postPaystack,
  postStripe,
  stripeEvent,
  stripePaymentIntent,
} from '../../test/helpers/provider-events.ts';
import {
  customerBalance,
  lockCustomerBalances,
  recordBalanceTransaction,
} from '../modules/balances/balances.ledger.ts';
import type { ProviderName } from '../shared/provider-names.ts';
import { resolveUnknownRefunds } from '../worker/refunds.jobs.ts';

const RUNS = Number(process.env.CREDIT_NOTE_PROPERTY_RUNS ?? 50);
const SEED =
  process.env.CREDIT_NOTE_PROPERTY_SEED === undefined ? undefined : Number(process.env.CREDIT_NOTE_PROPERTY_SEED);
const MONTH_MS = 30 * 86_400_000;
const PRICE = 10_000;

type App = TestApp & FakeProviders;

type Step =
  /** A payment of invoice `invoice`: all it still owes, or `share` percent of it. */
  | { kind: 'pay'; invoice: number; share: number | null }
  /**
   * A credit note on invoice `invoice` of `share` percent of what may still be credited (over
   * 100: more than allowed); what goes beyond the amount still owed is split by the weights.
   */
  | { kind: 'note'; invoice: number; share: number; refund: number; credit: number; outOfBand: number; lines: boolean }
  /** The next `times` refund requests at the provider get `fault`. */
  | { kind: 'fault'; fault: Fault; times: number }
  /** A minute and more passes; the worker resumes refunds without an answer. */
  | { kind: 'tick' }
  /** The provider's event of one of its refunds, delivered twice. */
  | { kind: 'deliver'; pick: number }
  /** A ledger adjustment: `amount` given, or (negative) taken within the balance. */
  | { kind: 'adjust'; amount: number }
  /** POST …/void of one of the history's notes. */
  | { kind: 'void'; pick: number };

interface History {
  provider: ProviderName;
  steps: Step[];
}

function history(): fc.Arbitrary<History> {
  const invoice = fc.nat(1);
  const weight = fc.nat(3);
  const step: fc.Arbitrary<Step> = fc.oneof(
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant('pay' as const),
        invoice,
        share: fc.option(fc.integer({ min: 10, max: 90 }), { freq: 2 }),
      }),
    },
    {
      weight: 5,
      arbitrary: fc.record({
        kind: fc.constant('note' as const),
        invoice,
        share: fc.integer({ min: 1, max: 120 }),
        refund: weight,
        credit: weight,
        outOfBand: weight,
        lines: fc.boolean(),
      }),
    },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant('fault' as const),
        fault: fc.constantFrom<Fault>('lose', 'lose-error', 'error', 'timeout'),
        times: fc.integer({ min: 1, max: 2 }),
      }),
    },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('tick' as const) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('deliver' as const), pick: fc.nat() }) },
    {
      weight: 1,
      arbitrary: fc.record({ kind: fc.constant('adjust' as const), amount: fc.integer({ min: -6000, max: 6000 }) }),
    },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('void' as const), pick: fc.nat() }) },
  );
  // Most histories start with the first invoice paid: the notes then have money to refund.
  const start = fc.option(fc.constant<Step>({ kind: 'pay', invoice: 0, share: null }), { freq: 4, nil: undefined });
  return fc
    .record({
      provider: fc.constantFrom<ProviderName>('paystack', 'stripe'),
      start,
      steps: fc.array(step, { minLength: 1, maxLength: 10 }),
    })
    .map(({ provider, start, steps }) => ({ provider, steps: start === undefined ? steps : [start, ...steps] }));
}

// Histories that once caught a defect, run first every time: Paystack (no idempotency on
// POST /refund) made a note's refund and its answer was lost; asking again without the
// look-up would refund twice.
const REGRESSIONS: History[] = [
  {
    provider: 'paystack',
    steps: [
      { kind: 'pay', invoice: 1, share: null },
      { kind: 'fault', fault: 'lose', times: 1 },
      { kind: 'note', invoice: 1, share: 1, refund: 1, credit: 0, outOfBand: 0, lines: false },
      { kind: 'fault', fault: 'lose', times: 1 },
    ],
  },
];

interface Run {
  app: App;
  provider: ProviderName;
  customerId: string;
  subscriptionId: string;
  currency: string;
  invoices: string[];
  notes: string[];
  /** The provider references of this history's payments (the fakes serve every history). */
  payments: Set<string>;
}

function noServerError(res: TestResponse, what: string): TestResponse {
  assert.ok(res.status < 500, `${what} answered ${res.status}: ${res.text}`);
  return res;
}

async function pay(run: Run, step: Extract<Step, { kind: 'pay' }>): Promise<void> {
  const { app } = run;
  const invoice = await invoiceById(app, run.invoices[step.invoice]!);
  if (invoice.status !== 'open' || invoice.amount_remaining === 0) return;
  const amount =
    step.share === null
      ? invoice.amount_remaining
      : Math.max(1, Math.floor((invoice.amount_remaining * step.share) / 100));
  const metadata = { subscription_id: run.subscriptionId, invoice_id: invoice.id };
  if (run.provider === 'paystack') {
    const charge = paystackCharge({ amount, currency: run.currency, metadata });
    noServerError(await postPaystack(app, charge), 'paystack payment');
    app.paystack.paid(charge.data.reference, amount);
    run.payments.add(charge.data.reference);
  } else {
    const intent = stripePaymentIntent({ amount, currency: 'usd', metadata });
    noServerError(await postStripe(app, stripeEvent('payment_intent.succeeded', intent)), 'stripe payment');
    app.stripe.paid(intent.id, amount);
    run.payments.add(intent.id);
  }
}

async function note(run: Run, step: Extract<Step, { kind: 'note' }>): Promise<void> {
  const { app } = run;
  const invoice = await invoiceById(app, run.invoices[step.invoice]!);
  const credited = (await app.request('GET', `/api/credit-notes?invoice_id=${invoice.id}&limit=100`)).body.data.filter(
    (n: { status: string }) => n.status === 'issued',
  );
  const creditable = invoice.total - credited.reduce((sum: number, n: { amount: number }) => sum + n.amount, 0);
  const amount = Math.max(1, Math.ceil((Math.max(creditable, 1) * step.share) / 100));
  const payable = invoice.status === 'open' || invoice.status === 'uncollectible';
  const post = amount - Math.min(amount, payable ? invoice.amount_remaining : 0);
  const weights = step.refund + step.credit + step.outOfBand || 1;
  const refund = Math.floor((post * step.refund) / weights);
  const credit = Math.floor((post * step.credit) / weights);
  const body: Record<string, unknown> = {
    invoice_id: invoice.id,
    refund_amount: refund,
    credit_amount: credit,
    out_of_band_amount: post - refund - credit,
  };
  if (step.lines) body.lines = [{ invoice_line_id: invoice.lines[0]!.id, amount }];
  else body.amount = amount;
  const res = noServerError(await app.request('POST', '/api/credit-notes', { body }), 'credit note');
  // Over what may be credited: 400. Within it, refused only for a refund the payments cannot hold (422).
  if (amount > creditable) assert.equal(res.status, 400, res.text);
  else if (refund === 0) assert.equal(res.status, 201, res.text);
  else assert.ok([201, 422].includes(res.status), `credit note: ${res.status} ${res.text}`);
  if (res.status === 201) run.notes.push(res.body.id);
}

function fake(run: Run) {
  return run.provider === 'paystack' ? run.app.paystack : run.app.stripe;
}

async function deliver(run: Run, pick: number): Promise<void> {
  const { app } = run;
  if (run.provider === 'paystack') {
    const ids = [...app.paystack.refunds.keys()];
    if (ids.length === 0) return;
    const id = ids[pick % ids.length]!;
    for (let i = 0; i < 2; i += 1) assert.equal(await app.paystack.sendRefundEvent(app.baseUrl, id, 'processed'), 200);
  } else {
    const ids = [...app.stripe.refunds.keys()];
    if (ids.length === 0) return;
    const id = ids[pick % ids.length]!;
    const at = Math.floor(app.clock.now().getTime() / 1000);
    for (let i = 0; i < 2; i += 1)
      assert.equal(await app.stripe.sendRefundEvent(app.baseUrl, id, 'succeeded', at), 200);
  }
}

async function adjust(run: Run, amount: number): Promise<void> {
  await run.app.deps.db.transaction().execute(async (trx) => {
    await lockCustomerBalances(trx, [run.customerId]);
    const balance = await customerBalance(trx, run.customerId, run.currency);
    const moved = amount >= 0 ? amount : -Math.min(-amount, balance);
    if (moved === 0) return;
    await recordBalanceTransaction(trx, run.app.clock, {
      customerId: run.customerId,
      testClockId: null,
      currency: run.currency,
      amount: moved,
      kind: 'adjustment',
    });
  });
}

/** Faults cleared; the clock moves and the worker resumes refunds until each has its provider's answer. */
async function settle(run: Run): Promise<void> {
  fake(run).clearFaults();
  for (let round = 0; round < 10; round += 1) {
    const waiting = await run.app.deps.db
      .selectFrom('refunds')
      .select('id')
      .where('status', '=', 'pending')
      .where('provider_refund_id', 'is', null)
      .execute();
    if (waiting.length === 0) return;
    run.app.clock.advance(11 * 60_000);
    await resolveUnknownRefunds.run(run.app.deps);
  }
  assert.fail('refunds still without an answer after 10 rounds of the worker');
}

async function check(run: Run): Promise<void> {
  const { app } = run;
  const db = app.deps.db;
  const ledger = await db
    .selectFrom('customer_balance_transactions')
    .selectAll()
    .where('customer_id', '=', run.customerId)
    .execute();
  const sum = ledger.reduce((total, row) => total + Number(row.amount), 0);
  const shown = (await app.request('GET', `/api/customers/${run.customerId}`)).body.balances[run.currency] ?? 0;
  assert.equal(shown, sum, 'the balance is the sum of its ledger');
  assert.ok(sum >= 0, 'never below 0');

  const notes = (await app.request('GET', `/api/credit-notes?customer_id=${run.customerId}&limit=100`)).body.data;
  assert.equal(notes.length, run.notes.length);
  const ledgerOf = (kind: string) =>
    ledger.filter((row) => row.kind === kind).reduce((total, row) => total + Number(row.amount), 0);
  type Note = {
    id: string;
    invoice_id: string;
    status: string;
    amount: number;
    credit_amount: number;
    pre_payment_amount: number;
    post_payment_amount: number;
    refund_amount: number;
    refunds: { refund_id: string; amount: number }[];
  };
  assert.equal(
    ledgerOf('credit_note'),
    notes.reduce((total: number, n: Note) => total + n.credit_amount, 0),
  );
  assert.equal(
    ledgerOf('reversal'),
    0 - notes.filter((n: Note) => n.status === 'void').reduce((total: number, n: Note) => total + n.credit_amount, 0),
  );

  for (const invoiceId of run.invoices) {
    const invoice = await invoiceById(app, invoiceId);
    const live = notes.filter((n: Note) => n.invoice_id === invoiceId && n.status === 'issued');
    const total = (key: keyof Note) => live.reduce((s: number, n: Note) => s + (n[key] as number), 0);
    assert.ok(
      total('amount') <= invoice.total,
      `invoice ${invoiceId}: notes ${total('amount')} > total ${invoice.total}`,
    );
    assert.equal(invoice.pre_payment_credit_notes_amount, total('pre_payment_amount'));
    assert.equal(invoice.post_payment_credit_notes_amount, total('post_payment_amount'));
    assert.equal(invoice.amount_due, invoice.total - invoice.applied_balance - invoice.pre_payment_credit_notes_amount);
    assert.ok(invoice.amount_paid <= invoice.amount_due);
  }

  // Exactly once at the provider: each refund a note asked for is one refund there, of its amount.
  const ours = new Set<string>();
  for (const n of notes as Note[]) {
    assert.equal(
      n.refunds.reduce((s, r) => s + r.amount, 0),
      n.refund_amount,
    );
    for (const refund of n.refunds) {
      ours.add(refund.refund_id);
      const made = fake(run).ledger.refundsWithMarker(refund.refund_id);
      assert.equal(made.length, 1, `refund ${refund.refund_id} reached the provider ${made.length} times`);
      assert.equal(made[0]!.amount, refund.amount);
    }
  }
  for (const made of fake(run).ledger.refunds) {
    if (run.payments.has(made.payment))
      assert.ok(made.marker !== null && ours.has(made.marker), `the provider refunded ${made.marker}, not ours`);
  }
}

test('credit notes: balances are their ledgers, no invoice over-credited, every refund at the provider exactly once', async (t) => {
  const app = await appWithFakeProviders(t, { PROVIDER_TIMEOUT: '150ms' });
  const plans = {
    paystack: (await createPlan(app, { amount: PRICE, currency: 'NGN' })).id as string,
    stripe: (await createPlan(app, { amount: PRICE, currency: 'USD' })).id as string,
  };
  await fc.assert(
    fc.asyncProperty(history(), async (h) => {
      for (const fakeProvider of [app.paystack, app.stripe]) fakeProvider.clearFaults();
      const customer = await createCustomer(app);
      const created = await app.request('POST', '/api/subscriptions', {
        body: { customer_id: customer.id, plan_id: plans[h.provider] },
      });
      assert.equal(created.status, 201, created.text);
      const first = (await app.request('GET', `/api/invoices?subscription_id=${created.body.id}`)).body.data[0];
      const second = await issueTestInvoice(app, created.body.id, {
        periodStart: new Date(Date.parse(first.period_end) + MONTH_MS).toISOString(),
      });
      const run: Run = {
        app,
        provider: h.provider,
        customerId: customer.id,
        subscriptionId: created.body.id,
        currency: h.provider === 'paystack' ? 'NGN' : 'USD',
        invoices: [first.id, second.id],
        notes: [],
        payments: new Set(),
      };
      for (const step of h.steps) {
        switch (step.kind) {
          case 'pay':
            await pay(run, step);
            break;
          case 'note':
            await note(run, step);
            break;
          case 'fault':
            fake(run).inject(
              step.fault,
              { method: 'POST', path: h.provider === 'paystack' ? '/refund' : '/v1/refunds' },
              step.times,
            );
            break;
          case 'tick':
            app.clock.advance(61_000);
            await resolveUnknownRefunds.run(app.deps);
            break;
          case 'deliver':
            await deliver(run, step.pick);
            break;
          case 'adjust':
            await adjust(run, step.amount);
            break;
          case 'void':
            if (run.notes.length > 0) {
              const id = run.notes[step.pick % run.notes.length]!;
              const res = noServerError(await app.request('POST', `/api/credit-notes/${id}/void`), 'void');
              assert.ok([200, 409].includes(res.status), `void: ${res.status} ${res.text}`);
            }
            break;
        }
      }
      await settle(run);
      await check(run);
    }),
    { numRuns: RUNS, seed: SEED, examples: SEED === undefined ? REGRESSIONS.map((h) => [h]) : [] },
  );
});
