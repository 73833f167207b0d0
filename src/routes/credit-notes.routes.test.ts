// POST/GET /api/credit-notes and …/void (SPEC §14 "Credit notes") over HTTP, on both
// databases, against the fake Paystack and Stripe (real HTTP servers): the worked example (a
// paid invoice split three ways), open invoices, lines, voids, exactly-once refunds after a
// lost answer, idempotency, and two notes racing for one invoice.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { appWithFakeProviders, type FakeProviders } from '../../test/helpers/provider-apps.ts';
import type { TestApp } from '../../test/helpers/app.ts';
import { createCustomer, createPlan, createSubscription } from '../../test/helpers/factories.ts';
import { invoiceById, invoicesOf } from '../../test/helpers/invoice-payments.ts';
import {
  paystackCharge,
  postPaystack,
  postStripe,
  stripeEvent,
  stripePaymentIntent,
} from '../../test/helpers/provider-events.ts';
import { lockCustomerBalances, recordBalanceTransaction } from '../modules/balances/balances.ledger.ts';
import { resolveUnknownRefunds } from '../worker/refunds.jobs.ts';
import { createCreditNote } from '../billing/credit-notes.ts';

type App = TestApp & FakeProviders;

/** A subscription on a plan of `amount` in `currency` and its first (open) invoice. */
async function openInvoice(app: App, amount: number, currency: 'USD' | 'NGN') {
  const customer = await createCustomer(app);
  const plan = await createPlan(app, { amount, currency });
  const subscription = await createSubscription(app, { customerId: customer.id, planId: plan.id });
  const [invoice] = await invoicesOf(app, subscription.id);
  assert.equal(invoice!.status, 'open');
  return { customer, subscription, invoice: invoice! };
}

/** Pays invoice `invoiceId` of `subscriptionId` with a Stripe PaymentIntent of `amount` USD (known to the fake). */
async function payWithStripe(app: App, subscriptionId: string, invoiceId: string, amount: number) {
  const intent = stripePaymentIntent({ amount, metadata: { subscription_id: subscriptionId, invoice_id: invoiceId } });
  assert.equal((await postStripe(app, stripeEvent('payment_intent.succeeded', intent))).status, 200);
  app.stripe.paid(intent.id, amount);
  return intent.id;
}

/** Pays invoice `invoiceId` of `subscriptionId` with a Paystack charge of `amount` NGN (known to the fake). */
async function payWithPaystack(app: App, subscriptionId: string, invoiceId: string, amount: number) {
  const charge = paystackCharge({ amount, metadata: { subscription_id: subscriptionId, invoice_id: invoiceId } });
  assert.equal((await postPaystack(app, charge)).status, 200);
  app.paystack.paid(charge.data.reference, amount);
  return charge.data.reference;
}

function creditNote(app: App, body: Record<string, unknown>, headers?: Record<string, string>) {
  return app.request('POST', '/api/credit-notes', { body, headers });
}

async function balanceOf(app: App, customerId: string, currency: string): Promise<number> {
  const customer = (await app.request('GET', `/api/customers/${customerId}`)).body;
  return customer.balances[currency] ?? 0;
}

async function ledgerOf(app: App, customerId: string) {
  return app.deps.db
    .selectFrom('customer_balance_transactions')
    .select(['id', 'kind', 'amount', 'invoice_id'])
    .where('customer_id', '=', customerId)
    .orderBy('id')
    .execute();
}

test('worked example: a paid invoice of 10,000 split three ways → one refund of 3,000 at Stripe, +5,000 credit, 2,000 out of band', async (t) => {
  const app = await appWithFakeProviders(t);
  const { customer, subscription, invoice } = await openInvoice(app, 10_000, 'USD');
  const intent = await payWithStripe(app, subscription.id, invoice.id, 10_000);
  assert.equal((await invoiceById(app, invoice.id)).status, 'paid');

  const res = await creditNote(app, {
    invoice_id: invoice.id,
    amount: 10_000,
    reason: 'product_unsatisfactory',
    refund_amount: 3000,
    credit_amount: 5000,
    out_of_band_amount: 2000,
    memo: 'Two days of outage',
  });
  assert.equal(res.status, 201, res.text);
  const note = res.body;
  assert.match(note.id, /^cn_/);
  assert.equal(note.number, 'CN-000001');
  assert.deepEqual(
    [note.amount, note.pre_payment_amount, note.post_payment_amount, note.refund_amount, note.credit_amount],
    [10_000, 0, 10_000, 3000, 5000],
  );
  assert.equal(note.out_of_band_amount, 2000);
  assert.equal(note.status, 'issued');
  assert.equal(note.currency, 'USD');
  assert.equal(note.customer_id, customer.id);
  assert.equal(note.refunds.length, 1);
  assert.equal(note.refunds[0].amount, 3000);

  // The provider saw exactly one refund of 3,000, carrying our refund id.
  assert.equal(app.stripe.ledger.refunds.length, 1);
  assert.deepEqual([app.stripe.ledger.refunds[0]!.amount, app.stripe.ledger.refunds[0]!.payment], [3000, intent]);
  assert.equal(app.stripe.ledger.refundsWithMarker(note.refunds[0].refund_id).length, 1);
  const refund = (await app.request('GET', `/api/refunds/${note.refunds[0].refund_id}`)).body;
  assert.equal(refund.status, 'pending', "pending until Stripe's event settles it (SPEC §10)");
  assert.equal(refund.amount, 3000);

  assert.equal(await balanceOf(app, customer.id, 'USD'), 5000);
  const ledger = await ledgerOf(app, customer.id);
  assert.deepEqual(
    ledger.map((row) => [row.id, row.kind, Number(row.amount), row.invoice_id]),
    [[note.balance_transaction_id, 'credit_note', 5000, invoice.id]],
  );
  assert.equal(note.reversal_balance_transaction_id, null);

  const after = (await app.request('GET', `/api/invoices/${invoice.id}`)).body;
  assert.deepEqual(
    [after.status, after.amount_paid, after.pre_payment_credit_notes_amount, after.post_payment_credit_notes_amount],
    ['paid', 10_000, 0, 10_000],
  );
  const events = (await app.request('GET', '/api/events?topic=credit_note.created')).body.data;
  assert.equal(events.length, 1);
  assert.equal(events[0].data.id, note.id);

  // Nothing more may be credited, and a note that refunded cannot be voided.
  const more = await creditNote(app, { invoice_id: invoice.id, amount: 1, out_of_band_amount: 1 });
  assert.equal(more.status, 400, more.text);
  assert.match(more.body.message, /exceeds the 0 that may still be credited/);
  const voided = await app.request('POST', `/api/credit-notes/${note.id}/void`);
  assert.equal(voided.status, 409, voided.text);
  assert.match(voided.body.message, /a refund is not taken back/);
  assert.equal(app.stripe.ledger.refunds.length, 1);
});

test('paid invoice: the split must add up exactly, refunds stay within the payments; nothing changes on a refusal', async (t) => {
  const app = await appWithFakeProviders(t);
  const { customer, subscription, invoice } = await openInvoice(app, 5000, 'NGN');
  await payWithPaystack(app, subscription.id, invoice.id, 5000);

  for (const body of [
    { amount: 3000, refund_amount: 1000, credit_amount: 1000 },
    { amount: 3000 },
    { amount: 3000, refund_amount: 3000, out_of_band_amount: 1 },
  ]) {
    const res = await creditNote(app, { invoice_id: invoice.id, ...body });
    assert.equal(res.status, 400, res.text);
    assert.equal(res.body.code, 'validation_error');
    assert.match(res.body.message, /must equal 3000/);
  }
  const both = await creditNote(app, { invoice_id: invoice.id, amount: 10, lines: [], credit_amount: 10 });
  assert.equal(both.status, 400);
  const neither = await creditNote(app, { invoice_id: invoice.id, credit_amount: 10 });
  assert.equal(neither.status, 400);
  assert.match(neither.body.message, /either amount or lines/);
  const unknown = await creditNote(app, { invoice_id: 'inv_01JD3Q7Z8X9Y0A1B2C3D4E5F6G', amount: 1 });
  assert.equal(unknown.status, 404);

  // A payment's own refund first: the note may refund only what remains of it.
  const [payment] = (await app.request('GET', `/api/payments?customer_id=${customer.id}`)).body.data;
  assert.equal(
    (await app.request('POST', `/api/payments/${payment.id}/refund`, { body: { amount: 4500 } })).status,
    202,
  );
  const tooMuch = await creditNote(app, { invoice_id: invoice.id, amount: 1000, refund_amount: 1000 });
  assert.equal(tooMuch.status, 422, tooMuch.text);
  assert.equal(tooMuch.body.code, 'invalid_state');
  assert.equal(tooMuch.body.details.refundable, 500);

  assert.equal((await app.request('GET', `/api/credit-notes?invoice_id=${invoice.id}`)).body.meta.total, 0);
  assert.equal(await balanceOf(app, customer.id, 'NGN'), 0);
  assert.equal(app.paystack.ledger.refunds.length, 1, 'only the payment refund');
  const invoiceAfter = await invoiceById(app, invoice.id);
  assert.equal(invoiceAfter.post_payment_credit_notes_amount, 0);

  const ok = await creditNote(app, { invoice_id: invoice.id, amount: 1000, refund_amount: 500, credit_amount: 500 });
  assert.equal(ok.status, 201, ok.text);
  assert.equal(app.paystack.ledger.refundsWithMarker(ok.body.refunds[0].refund_id).length, 1);
  assert.equal(app.paystack.ledger.refunds.length, 2);
});

test('open invoice: a note lowers amount_due (amount or lines); voiding restores it; the whole remainder leaves it paid and the subscription active', async (t) => {
  const app = await appWithFakeProviders(t);
  const { customer, subscription, invoice } = await openInvoice(app, 5000, 'NGN');
  const line = invoice.lines[0]!;

  const first = await creditNote(app, { invoice_id: invoice.id, amount: 2000, reason: 'order_change' });
  assert.equal(first.status, 201, first.text);
  assert.deepEqual([first.body.pre_payment_amount, first.body.post_payment_amount], [2000, 0]);
  let after = (await app.request('GET', `/api/invoices/${invoice.id}`)).body;
  assert.deepEqual(
    [after.status, after.amount_due, after.amount_remaining, after.pre_payment_credit_notes_amount],
    ['open', 3000, 3000, 2000],
  );
  const split = await creditNote(app, { invoice_id: invoice.id, amount: 100, credit_amount: 100 });
  assert.equal(split.status, 400);
  assert.match(split.body.message, /must be 0/);

  const byLine = await creditNote(app, { invoice_id: invoice.id, lines: [{ invoice_line_id: line.id, amount: 1000 }] });
  assert.equal(byLine.status, 201, byLine.text);
  assert.equal(byLine.body.amount, 1000);
  assert.equal(byLine.body.number, 'CN-000002');
  assert.deepEqual(
    byLine.body.lines.map((l: { invoice_line_id: string; amount: number; description: string }) => [
      l.invoice_line_id,
      l.amount,
      l.description,
    ]),
    [[line.id, 1000, line.description]],
  );
  const overLine = await creditNote(app, {
    invoice_id: invoice.id,
    lines: [{ invoice_line_id: line.id, amount: 4001 }],
  });
  assert.equal(overLine.status, 400);
  assert.match(overLine.body.message, /exceeds the 4000 left to credit on line/);
  const otherLine = await creditNote(app, {
    invoice_id: invoice.id,
    lines: [{ invoice_line_id: 'il_01JD3Q7Z8X9Y0A1B2C3D4E5F6G', amount: 1 }],
  });
  assert.equal(otherLine.status, 400);

  const voided = await app.request('POST', `/api/credit-notes/${first.body.id}/void`);
  assert.equal(voided.status, 200, voided.text);
  assert.equal(voided.body.status, 'void');
  assert.notEqual(voided.body.voided_at, null);
  after = (await app.request('GET', `/api/invoices/${invoice.id}`)).body;
  assert.deepEqual([after.amount_due, after.pre_payment_credit_notes_amount], [4000, 1000]);
  const again = await app.request('POST', `/api/credit-notes/${first.body.id}/void`);
  assert.equal(again.status, 409);

  // The rest of what is due: the invoice is paid by the note, the subscription moves.
  const rest = await creditNote(app, { invoice_id: invoice.id, amount: 4000 });
  assert.equal(rest.status, 201, rest.text);
  after = (await app.request('GET', `/api/invoices/${invoice.id}`)).body;
  assert.deepEqual([after.status, after.amount_due, after.amount_paid, after.amount_remaining], ['paid', 0, 0, 0]);
  assert.equal((await app.request('GET', `/api/subscriptions/${subscription.id}`)).body.status, 'active');
  const cannot = await app.request('POST', `/api/credit-notes/${rest.body.id}/void`);
  assert.equal(cannot.status, 409);
  assert.match(cannot.body.message, /which is paid now/);

  const list = (await app.request('GET', `/api/credit-notes?customer_id=${customer.id}&sort_by=amount&sort_order=asc`))
    .body;
  assert.equal(list.meta.total, 3);
  assert.deepEqual(
    list.data.map((n: { amount: number }) => n.amount),
    [1000, 2000, 4000],
  );
  const got = await app.request('GET', `/api/credit-notes/${rest.body.id}`);
  assert.equal(got.status, 200);
  assert.deepEqual(got.body, rest.body);
  assert.equal((await app.request('GET', '/api/credit-notes/cn_nope')).status, 404);
  const topics = (await app.request('GET', '/api/events?limit=100')).body.data.map((e: { topic: string }) => e.topic);
  assert.equal(topics.filter((topic: string) => topic === 'credit_note.created').length, 3);
  assert.equal(topics.filter((topic: string) => topic === 'credit_note.voided').length, 1);

  const voidInvoice = await openInvoice(app, 5000, 'NGN');
  assert.equal((await app.request('POST', `/api/invoices/${voidInvoice.invoice.id}/void`)).status, 200);
  const onVoid = await creditNote(app, { invoice_id: voidInvoice.invoice.id, amount: 1 });
  assert.equal(onVoid.status, 409);
  assert.match(onVoid.body.message, /cannot be credited in its current state \(void\)/);
});

test('void of a credit given: reversed in the ledger while the balance holds it, else 409 conflict', async (t) => {
  const app = await appWithFakeProviders(t);
  const { customer, subscription, invoice } = await openInvoice(app, 5000, 'NGN');
  await payWithPaystack(app, subscription.id, invoice.id, 5000);

  const note = await creditNote(app, { invoice_id: invoice.id, amount: 2000, credit_amount: 2000 });
  assert.equal(note.status, 201, note.text);
  assert.equal(await balanceOf(app, customer.id, 'NGN'), 2000);
  const voided = await app.request('POST', `/api/credit-notes/${note.body.id}/void`);
  assert.equal(voided.status, 200, voided.text);
  assert.equal(await balanceOf(app, customer.id, 'NGN'), 0);
  assert.deepEqual(
    (await ledgerOf(app, customer.id)).map((row) => [row.id, row.kind, Number(row.amount)]),
    [
      [note.body.balance_transaction_id, 'credit_note', 2000],
      [voided.body.reversal_balance_transaction_id, 'reversal', -2000],
    ],
  );
  assert.equal((await invoiceById(app, invoice.id)).post_payment_credit_notes_amount, 0);

  const spent = await creditNote(app, { invoice_id: invoice.id, amount: 3000, credit_amount: 3000 });
  assert.equal(spent.status, 201);
  // An invoice takes 2,000 of that credit (as issuing does: under the balance's lock).
  await app.deps.db.transaction().execute(async (trx) => {
    await lockCustomerBalances(trx, [customer.id]);
    await recordBalanceTransaction(trx, app.clock, {
      customerId: customer.id,
      testClockId: null,
      currency: 'NGN',
      amount: -2000,
      kind: 'applied_to_invoice',
      invoiceId: invoice.id,
    });
  });
  const refused = await app.request('POST', `/api/credit-notes/${spent.body.id}/void`);
  assert.equal(refused.status, 409, refused.text);
  assert.equal(refused.body.code, 'conflict');
  assert.deepEqual(refused.body.details, { credit_amount: 3000, balance: 1000 });
  assert.equal(await balanceOf(app, customer.id, 'NGN'), 1000);
  assert.equal((await app.request('GET', `/api/credit-notes/${spent.body.id}`)).body.status, 'issued');
});

test("exactly once: Stripe acts on the note's refund but the answer is lost → the worker finds it by our id and sends nothing again", async (t) => {
  const app = await appWithFakeProviders(t, { PROVIDER_TIMEOUT: '300ms' });
  const { subscription, invoice } = await openInvoice(app, 8000, 'USD');
  await payWithStripe(app, subscription.id, invoice.id, 8000);

  app.stripe.inject('lose', { method: 'POST', path: '/v1/refunds' });
  const res = await creditNote(app, { invoice_id: invoice.id, amount: 8000, refund_amount: 8000 });
  assert.equal(res.status, 201, 'the note is issued; its refund is pending for the worker');
  const refundId = res.body.refunds[0].refund_id;
  let refund = (await app.request('GET', `/api/refunds/${refundId}`)).body;
  assert.deepEqual([refund.status, refund.provider_reference], ['pending', refundId], 'no provider answer yet');
  assert.equal(app.stripe.ledger.refundsWithMarker(refundId).length, 1, 'Stripe did make it');

  app.clock.advance(60_000);
  assert.equal(await resolveUnknownRefunds.run(app.deps), 1);
  assert.equal(app.stripe.ledger.refundsWithMarker(refundId).length, 1, 'found by the look-up, not sent again');
  assert.equal(app.stripe.ledger.refunds.length, 1);
  refund = (await app.request('GET', `/api/refunds/${refundId}`)).body;
  assert.equal(refund.provider_reference, app.stripe.ledger.refunds[0]!.providerId);
});

test("a crash right after Paystack made the note's refund: the note and its refund were committed first; the worker resumes it once the lease passes and finds it", async (t) => {
  const app = await appWithFakeProviders(t, { PROVIDER_TIMEOUT: '300ms' });
  const { subscription, invoice } = await openInvoice(app, 6000, 'NGN');
  await payWithPaystack(app, subscription.id, invoice.id, 6000);
  const paystack = app.deps.providers.paystack!;
  // The process dies after Paystack acted, before anything is recorded: the call throws what
  // no provider error is, as a dying process would leave it.
  const crashing = Object.create(paystack) as typeof paystack;
  crashing.createRefund = async (input) => {
    await paystack.createRefund(input);
    throw new Error('process killed');
  };
  const deps = { ...app.deps, providers: { ...app.deps.providers, paystack: crashing } };
  await assert.rejects(
    createCreditNote(deps, { invoice_id: invoice.id, amount: 6000, refund_amount: 2500, credit_amount: 3500 }, null),
    /process killed/,
  );
  const [note] = (await app.request('GET', `/api/credit-notes?invoice_id=${invoice.id}`)).body.data;
  assert.equal(note.refund_amount, 2500, 'the note was committed before the call');
  const refundId = note.refunds[0].refund_id;
  assert.equal(app.paystack.ledger.refundsWithMarker(refundId).length, 1);

  assert.equal(await resolveUnknownRefunds.run(app.deps), 0, 'the dead call still holds the lease');
  app.clock.advance(300 + 60_000);
  assert.equal(await resolveUnknownRefunds.run(app.deps), 1);
  assert.equal(app.paystack.ledger.refundsWithMarker(refundId).length, 1, 'found by its marker, not sent again');
  const refund = (await app.request('GET', `/api/refunds/${refundId}`)).body;
  assert.equal(refund.provider_reference, app.paystack.ledger.refundsWithMarker(refundId)[0]!.providerId);
  app.clock.advance(3_600_000);
  assert.equal(await resolveUnknownRefunds.run(app.deps), 0, 'answered: nothing left to resume');
});

test('Idempotency-Key: the same request twice is one credit note', async (t) => {
  const app = await appWithFakeProviders(t);
  const { invoice } = await openInvoice(app, 5000, 'NGN');
  const headers = { 'idempotency-key': 'cn-once-1' };
  const first = await creditNote(app, { invoice_id: invoice.id, amount: 700 }, headers);
  const second = await creditNote(app, { invoice_id: invoice.id, amount: 700 }, headers);
  assert.equal(first.status, 201);
  assert.equal(second.status, 201);
  assert.equal(second.headers.get('idempotent-replayed'), 'true');
  assert.equal(second.body.id, first.body.id);
  assert.equal((await app.request('GET', `/api/credit-notes?invoice_id=${invoice.id}`)).body.meta.total, 1);
  assert.equal((await invoiceById(app, invoice.id)).amount_due, 4300);

  // A first attempt that made its note but never stored its response (its instance died):
  // the retry finds the note by the request's key instead of making another.
  const key = 'f'.repeat(64);
  const made = await createCreditNote(app.deps, { invoice_id: invoice.id, amount: 300 }, key);
  const retried = await createCreditNote(app.deps, { invoice_id: invoice.id, amount: 300 }, key);
  assert.equal(retried.id, made.id);
  assert.equal((await invoiceById(app, invoice.id)).amount_due, 4000);
});

test('two notes at once on one invoice never exceed its total (one of 6,000 + 6,000 on 10,000 is refused)', async (t) => {
  const app = await appWithFakeProviders(t);
  const { subscription, invoice } = await openInvoice(app, 10_000, 'NGN');
  await payWithPaystack(app, subscription.id, invoice.id, 10_000);
  for (let round = 0; round < 3; round += 1) {
    const results = await Promise.all(
      [0, 1].map(() => creditNote(app, { invoice_id: invoice.id, amount: 3000, out_of_band_amount: 3000 })),
    );
    const statuses = results.map((res) => res.status).sort();
    if (round === 0) assert.deepEqual(statuses, [201, 201]);
    if (round === 1) assert.deepEqual(statuses, [201, 400], results.map((res) => res.text).join(' | '));
    if (round === 2) assert.deepEqual(statuses, [400, 400]);
  }
  const notes = (await app.request('GET', `/api/credit-notes?invoice_id=${invoice.id}`)).body;
  assert.equal(notes.meta.total, 3);
  assert.deepEqual(notes.data.map((n: { number: string }) => n.number).sort(), ['CN-000001', 'CN-000002', 'CN-000003']);
  assert.equal((await invoiceById(app, invoice.id)).post_payment_credit_notes_amount, 9000);
});

test("a test clock customer's credit notes are numbered in the clock's own sequence, stamped with its time, and deleted with it", async (t) => {
  const app = await appWithFakeProviders(t, { TEST_CLOCKS: 'true' });
  const clock = await app.request('POST', '/api/test-clocks', { body: { frozen_time: '2026-01-01T00:00:00.000Z' } });
  assert.equal(clock.status, 201, clock.text);
  const customer = await createCustomer(app, { test_clock: clock.body.id });
  const plan = await createPlan(app, { amount: 5000, currency: 'NGN' });
  const subscription = await createSubscription(app, { customerId: customer.id, planId: plan.id });
  const [invoice] = await invoicesOf(app, subscription.id);
  const note = await creditNote(app, { invoice_id: invoice!.id, amount: 1000 });
  assert.equal(note.status, 201, note.text);
  assert.equal(note.body.number, `CN-${clock.body.id}-000001`);
  assert.equal(note.body.created_at, '2026-01-01T00:00:00.000Z');

  const real = await openInvoice(app, 5000, 'NGN');
  const realNote = await creditNote(app, { invoice_id: real.invoice.id, amount: 1000 });
  assert.equal(realNote.body.number, 'CN-000001', 'the real sequence took no number from the clock');

  assert.equal((await app.request('DELETE', `/api/test-clocks/${clock.body.id}`)).status, 204);
  assert.equal((await app.request('GET', `/api/credit-notes/${note.body.id}`)).status, 404);
  assert.equal((await app.request('GET', `/api/credit-notes/${realNote.body.id}`)).status, 200);
});
