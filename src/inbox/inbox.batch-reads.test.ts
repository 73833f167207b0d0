// A batch's reads made before its rows run (billing/payment-batch.ts: payments, payers,
// saved cards; the inbox's held refunds) must leave the same end state as each event
// processed on its own, also where the batch's own rows change what was read: one reference
// reported twice, a refund arriving before its payment, a new payer paying twice, a payer's
// card saved by the batch, held refunds from before, an alias and its canonical reference,
// a link of two references. Both databases.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { buildTestApp, connectSecondInstance, type TestApp } from '../../test/helpers/app.ts';
import { ON_POSTGRES } from '../../test/helpers/database.ts';
import {
  nextSeq,
  paystackCharge,
  paystackRefund,
  PROVIDER_ENV,
  postPaystack,
  postStripe,
  stripeEvent,
  stripeInvoice,
  stripeInvoicePayment,
  stripePaymentIntent,
} from '../../test/helpers/provider-events.ts';
import { storeEvents } from './inbox.ts';
import { processEvents } from './inbox.batches.ts';
import { retryProviderEvents } from '../worker/provider-events.jobs.ts';

const HOUR = 3_600_000;

const BASIL = '2025-05-28.basil';

interface Sent {
  provider: 'paystack' | 'stripe';
  body: { event?: string; type?: string; id?: string; data: unknown };
}

const paystack = (body: Sent['body']): Sent => ({ provider: 'paystack', body });
const stripe = (body: Sent['body']): Sent => ({ provider: 'stripe', body });

/** The history: what is posted before the batches, and the batches (the last with a link). */
function history(): { before: Sent[]; batches: Sent[][] } {
  const returning = 'returning@example.com';
  const known = paystackCharge({ email: returning });
  const heldFor = `T-held-${nextSeq()}`;
  const twice = `T-twice-${nextSeq()}`;
  const refundFirst = `T-refund-first-${nextSeq()}`;
  // Stripe: an invoice already linked to its PaymentIntent, reported under both in the batch;
  // and a second pair linked inside the batch.
  const linkedIntent = stripePaymentIntent({ amount: 3000, email: 'linked@example.com' });
  const linkedInvoice = stripeInvoice({
    style: 'basil',
    subscription: null,
    amount: 3000,
    email: 'linked@example.com',
  });
  const intent = stripePaymentIntent({ amount: 2000, email: 'pair@example.com' });
  const invoice = stripeInvoice({ style: 'basil', subscription: null, amount: 2000, email: 'pair@example.com' });
  const before = [
    paystack(known),
    paystack(paystackRefund({ transactionReference: heldFor, amount: '1000' })),
    stripe(
      stripeEvent(
        'invoice_payment.paid',
        stripeInvoicePayment({ invoice: linkedInvoice.id, paymentIntent: linkedIntent.id, amount: 3000 }),
        { apiVersion: BASIL },
      ),
    ),
  ];
  // Each case a batch of its own: a mistake that throws is rerun row by row (inbox.batches.ts)
  // and would hide a silent one in the same batch.
  const batches = [
    // A returning payer with a saved card; a payment whose refund was held before the batch.
    [
      paystack(paystackCharge({ email: returning })),
      paystack(paystackCharge({ reference: heldFor, email: 'held@example.com' })),
    ],
    // One reference reported twice (a redelivery under another event id), then refunded.
    [
      paystack(paystackCharge({ reference: twice, email: 'twice@example.com' })),
      paystack(paystackCharge({ reference: twice, email: 'twice@example.com' })),
      paystack(paystackRefund({ transactionReference: twice, amount: '2000' })),
    ],
    // The refund before its payment, in one batch.
    [
      paystack(paystackRefund({ transactionReference: refundFirst, amount: '500' })),
      paystack(paystackCharge({ reference: refundFirst, email: 'refund-first@example.com' })),
    ],
    // A new payer paying twice (one customer, one saved card).
    [paystack(paystackCharge({ email: 'new@example.com' })), paystack(paystackCharge({ email: 'NEW@example.com' }))],
    // The alias and the canonical reference of one payment.
    [
      stripe(stripeEvent('invoice.paid', linkedInvoice, { apiVersion: BASIL })),
      stripe(stripeEvent('payment_intent.succeeded', linkedIntent, { apiVersion: BASIL })),
    ],
  ];
  // Two references linked inside the batch.
  const withLink = [
    stripe(stripeEvent('payment_intent.succeeded', intent, { apiVersion: BASIL })),
    stripe(stripeEvent('invoice.paid', invoice, { apiVersion: BASIL })),
    stripe(
      stripeEvent('invoice_payment.paid', stripeInvoicePayment({ invoice: invoice.id, paymentIntent: intent.id }), {
        apiVersion: BASIL,
      }),
    ),
    paystack(paystackCharge({ email: returning })),
  ];
  return { before, batches: [...batches, withLink] };
}

async function post(app: TestApp, sent: Sent) {
  const res = sent.provider === 'paystack' ? await postPaystack(app, sent.body) : await postStripe(app, sent.body);
  assert.equal(res.status, 200);
}

/** Stores `sent` in the inbox (each under a key of its own, as a redelivery with a new event id would be). */
async function store(app: TestApp, sent: readonly Sent[]) {
  const stored = await storeEvents(
    app.deps.db,
    app.deps.clock,
    sent.map(({ provider, body }) => ({
      provider,
      key: `batch:${body.id ?? JSON.stringify(body).length}:${nextSeq()}`,
      type: body.event ?? body.type ?? 'unknown',
      payload: JSON.stringify(body),
    })),
  );
  return stored.map((row, i) => ({ id: row!.id, row: row!, body: sent[i]!.body }));
}

/** Stores `sent` in the inbox and processes it in batches of `size` events (the sizes in turn, for a list). */
async function processInBatches(app: TestApp, sent: Sent[], size: number | readonly number[]): Promise<string[]> {
  const { deps } = app;
  const stored = await storeEvents(
    deps.db,
    deps.clock,
    sent.map(({ provider, body }) => ({
      provider,
      key: `batch:${body.id ?? JSON.stringify(body).length}:${nextSeq()}`,
      type: body.event ?? body.type ?? 'unknown',
      payload: JSON.stringify(body),
    })),
  );
  const outcomes: string[] = [];
  const sizes = typeof size === 'number' ? [size] : size;
  for (let i = 0, turn = 0; i < sent.length; i += sizes[turn++ % sizes.length]!) {
    const items = stored
      .slice(i, i + sizes[turn % sizes.length]!)
      .map((row, j) => ({ id: row!.id, row: row!, body: sent[i + j]!.body }));
    outcomes.push(...(await processEvents(deps.db, deps, items)));
  }
  return outcomes;
}

/** The end state, without ids or times (which differ between two apps). */
async function endState(app: TestApp) {
  const { db } = app.deps;
  const payments = await db
    .selectFrom('payments')
    .leftJoin('customers', 'customers.id', 'payments.customer_id')
    .select([
      'payments.provider_reference',
      'payments.status',
      'payments.amount',
      'payments.amount_refunded',
      'customers.email',
    ])
    .orderBy('payments.provider_reference')
    .execute();
  const refunds = await db
    .selectFrom('refunds')
    .innerJoin('payments', 'payments.id', 'refunds.payment_id')
    .select(['payments.provider_reference', 'refunds.amount', 'refunds.status'])
    .orderBy('payments.provider_reference')
    .orderBy('refunds.amount')
    .execute();
  const customers = await db.selectFrom('customers').select('email').orderBy('email').execute();
  const methods = await db
    .selectFrom('payment_methods')
    .innerJoin('customers', 'customers.id', 'payment_methods.customer_id')
    .select(['customers.email', 'payment_methods.fingerprint', 'payment_methods.status'])
    .orderBy('customers.email')
    .execute();
  const events = await db.selectFrom('events').select('topic').execute();
  const topics: Record<string, number> = {};
  for (const { topic } of events) topics[topic] = (topics[topic] ?? 0) + 1;
  const inbox = await db.selectFrom('provider_events').select(['status', 'error']).orderBy('status').execute();
  // Amounts as numbers: PostgreSQL answers bigint columns as text.
  return {
    payments: payments.map((row) => ({
      ...row,
      amount: Number(row.amount),
      amount_refunded: Number(row.amount_refunded),
    })),
    refunds: refunds.map((row) => ({ ...row, amount: Number(row.amount) })),
    customers,
    methods,
    topics,
    // Ids differ between two apps: a reason naming one compares without it.
    inbox: inbox.map((row) => `${row.status} ${row.error?.replace(/\b[a-z]+_[0-9A-Z]{26}\b/g, '<id>') ?? ''}`).sort(),
  };
}

test('a batch processed at once ends as its events processed one at a time: payments, refunds, customers, cards, events, inbox', async (t) => {
  const { before, batches } = history();
  const states = [];
  for (const together of [false, true]) {
    const app = await buildTestApp(t, { env: PROVIDER_ENV });
    for (const sent of before) await post(app, sent);
    for (const batch of batches) {
      const outcomes = await processInBatches(app, batch, together ? batch.length : 1);
      assert.ok(!outcomes.includes('failed'), `together ${together}: ${outcomes.join(', ')}`);
    }
    states.push(await endState(app));
  }
  const [oneByOne, together] = states;
  assert.deepEqual(together, oneByOne);
  // The history did what it says (so the comparison is not between two empty states).
  assert.equal(oneByOne!.payments.filter((row) => row.email === 'new@example.com').length, 2);
  assert.equal(oneByOne!.customers.filter((row) => row.email.toLowerCase() === 'new@example.com').length, 1);
  assert.equal(oneByOne!.methods.filter((row) => row.email === 'new@example.com').length, 1);
  assert.equal(oneByOne!.refunds.length, 3);
  assert.equal(oneByOne!.topics['payment.merged'], 1);
  assert.ok(oneByOne!.inbox.every((row) => row.startsWith('processed ') || row.startsWith('ignored ')));
});

// Payers named by case and Unicode variants of two addresses (composed, decomposed, upper
// case: one normalized email each), paying with one of two cards.
const EMAILS = ['Ädä@Exämple.com', 'A\u0308DÄ@EXÄMPLE.COM', 'ädä@exämple.com', 'bob@example.com', 'BOB@Example.COM'];
const CARDS = ['SIG_card_one', 'SIG_card_two'];

type Step =
  | { kind: 'charge'; ref: number; email: number; card: number }
  | { kind: 'refund'; ref: number; refund: number; amount: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    kind: fc.constant('charge' as const),
    ref: fc.nat(2),
    email: fc.nat(EMAILS.length - 1),
    card: fc.nat(CARDS.length - 1),
  }),
  fc.record({
    kind: fc.constant('refund' as const),
    ref: fc.nat(2),
    refund: fc.nat(2),
    amount: fc.integer({ min: 1, max: 3 }),
  }),
);

function toSent(steps: readonly Step[]): Sent[] {
  return steps.map((item) => {
    if (item.kind === 'refund') {
      return paystack(
        paystackRefund({
          transactionReference: `T-prop-${item.ref}`,
          refundReference: `RF-prop-${item.refund}`,
          amount: String(item.amount * 1000),
        }),
      );
    }
    const charge = paystackCharge({ reference: `T-prop-${item.ref}`, email: EMAILS[item.email]! });
    charge.data.authorization.signature = CARDS[item.card]!;
    return paystack(charge);
  });
}

test('property: any history of reports and refunds (same references, email variants, cards) split into batches at random ends as one at a time', async (t) => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(step, { minLength: 1, maxLength: 10 }),
      fc.array(fc.integer({ min: 1, max: 10 }), { minLength: 1, maxLength: 4 }),
      fc.option(fc.nat(EMAILS.length - 1), { nil: null }),
      async (steps, sizes, existing) => {
        const states = [];
        for (const split of [[1], sizes]) {
          const app = await buildTestApp(t, { env: PROVIDER_ENV });
          if (existing !== null) {
            const res = await app.request('POST', '/api/customers', { body: { email: EMAILS[existing] } });
            assert.equal(res.status, 201, res.text);
          }
          await processInBatches(app, toSent(steps), split);
          states.push(await endState(app));
        }
        assert.deepEqual(states[1], states[0]);
      },
    ),
    { numRuns: ON_POSTGRES ? 10 : 25 },
  );
});

test(
  'two instances processing batches of the same payers, payments and refunds at once apply each once: one customer per email, one card per payer, each refund once',
  { skip: !ON_POSTGRES && 'PostgreSQL only: SQLite has one writer' },
  async (t) => {
    const steps: Step[] = [
      { kind: 'charge', ref: 0, email: 0, card: 0 },
      { kind: 'charge', ref: 1, email: 1, card: 0 },
      { kind: 'refund', ref: 0, refund: 0, amount: 1 },
      { kind: 'charge', ref: 2, email: 3, card: 1 },
      { kind: 'refund', ref: 1, refund: 1, amount: 2 },
      { kind: 'charge', ref: 0, email: 2, card: 1 },
      { kind: 'refund', ref: 2, refund: 2, amount: 3 },
      { kind: 'charge', ref: 1, email: 4, card: 1 },
    ];
    const sent = toSent(steps);
    // Each instance processes its own delivery of every event, the second in reverse order.
    const app = await buildTestApp(t, { env: PROVIDER_ENV });
    const second = await connectSecondInstance(app);
    t.after(() => second.close());
    const first = await store(app, sent);
    const again = await store(app, [...sent].reverse());
    await Promise.all([processEvents(app.deps.db, app.deps, first), processEvents(second.db, second, again)]);
    // A row that lost a race for good is left to the worker's retry.
    for (let turn = 0; turn < 5 && (await retryProviderEvents.run(app.deps)) > 0; turn++) app.clock.advance(HOUR);
    const raced = await endState(app);

    const alone = await buildTestApp(t, { env: PROVIDER_ENV });
    await processEvents(alone.deps.db, alone.deps, await store(alone, sent));
    await processEvents(alone.deps.db, alone.deps, await store(alone, [...sent].reverse()));
    assert.deepEqual(raced, await endState(alone));
    // The history did what it says.
    assert.equal(raced.customers.length, 2);
    assert.equal(raced.methods.length, 3);
    assert.equal(raced.refunds.length, 3);
    assert.deepEqual(
      raced.payments.map((row) => row.amount_refunded),
      [1000, 2000, 3000],
    );
  },
);
