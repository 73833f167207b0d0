// Draft invoices (SPEC §12 "Drafts"), on both databases: a renewal whose composed lines
// include usage (or a proration) is issued `draft` — no number, no hosted page, never charged,
// never settled — until its period start + INVOICE_FINALIZE_DELAY, when it is numbered (the
// next gap-free number), `open` (`invoice.finalized`) and collected like any renewal. No
// production step yields usage yet, so these tests compose with a test-only step appended to
// the pipeline (a copy of the app's deps carries it, as IssueContext allows).
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { buildTestApp, connectSecondInstance, type TestApp } from '../../test/helpers/app.ts';
import { ON_POSTGRES } from '../../test/helpers/database.ts';
import { createCustomer, createPlan, createSubscription } from '../../test/helpers/factories.ts';
import {
  invoiceById,
  invoiceEvents,
  invoicesOf,
  reportPayment,
  runWorker,
} from '../../test/helpers/invoice-payments.ts';
import { saveTestPaymentMethod } from '../../test/helpers/payment-methods.ts';
import { appWithFakeProviders } from '../../test/helpers/provider-apps.ts';
import { PROVIDER_ENV } from '../../test/helpers/provider-events.ts';
import type { Deps } from '../deps.ts';
import { StateConflictError } from '../http/errors.ts';
import { voidInvoice } from '../modules/invoices/invoices.service.ts';
import { CLOCK_AWARE_JOBS } from '../worker/jobs.ts';
import { finalizeInvoices } from '../worker/invoices.jobs.ts';
import { Worker } from '../worker/runner.ts';
import { issueRenewalInvoices } from '../worker/subscriptions.jobs.ts';
import { advanceTestClocks } from '../worker/test-clocks.jobs.ts';
import { PIPELINE } from './compose/pipeline.ts';
import type { ComposeStep } from './compose/types.ts';
import { applySuccessfulPayment } from './subscription-payments.ts';

const HOUR = 3_600_000;
const USAGE = 1200;

/** A test-only usage step: renewals of plans named "Metered" bill USAGE minor units of calls over their period. */
const meteredUsage: ComposeStep = (lines, input) =>
  input.reason === 'renewal' && input.subscription?.plan.name === 'Metered'
    ? [
        ...lines,
        {
          kind: 'usage',
          description: `API calls × ${USAGE}`,
          amount: USAGE,
          currency: input.currency,
          quantity: USAGE,
          unit_amount: 1,
          period_start: input.subscription.period_start,
          period_end: input.subscription.period_end,
          plan_id: null,
          proration: false,
        },
      ]
    : lines;

/** `app.deps` composing with the usage step after the production pipeline. */
function withUsage(app: TestApp): Deps {
  const deps: Deps & { pipeline: readonly ComposeStep[] } = { ...app.deps, pipeline: [...PIPELINE, meteredUsage] };
  return deps;
}

/**
 * Active subscriptions (first invoices paid, INV-000001 …) of new customers on each of
 * `planIds`, created at one instant; the clock is left at their period end.
 */
async function activeAtPeriodEnd(app: TestApp, ...planIds: string[]) {
  const subs = [];
  for (const planId of planIds) {
    const created = await createSubscription(app, { planId });
    subs.push(await app.deps.db.transaction().execute((trx) => applySuccessfulPayment(trx, app.deps, created.id)));
  }
  app.clock.set(new Date(subs[0]!.current_period_end!));
  return subs;
}

const metered = (app: TestApp) => createPlan(app, { name: 'Metered', currency: 'NGN', amount: 5000 });

async function renewalOf(app: TestApp, subscriptionId: string) {
  const invoices = await invoicesOf(app, subscriptionId);
  assert.equal(invoices.length, 2, 'the first invoice and the renewal');
  return invoices[1]!;
}

async function hostedToken(app: TestApp, invoiceId: string): Promise<string> {
  const row = await app.deps.db
    .selectFrom('invoices')
    .select('hosted_token')
    .where('id', '=', invoiceId)
    .executeTakeFirstOrThrow();
  return row.hosted_token;
}

async function paystackApp(t: TestContext, env: Record<string, string> = {}) {
  const app = await appWithFakeProviders(t, env);
  app.paystack.webhookTarget = { url: app.baseUrl };
  return app;
}

test('a renewal with usage is a draft until INVOICE_FINALIZE_DELAY: unnumbered, not charged, not payable; then open with the next number, finalized, and charged', async (t) => {
  const app = await paystackApp(t);
  const plan = await metered(app);
  const sub = (await activeAtPeriodEnd(app, plan.id))[0]!;
  await saveTestPaymentMethod(app, sub.customer_id, 'paystack');
  const periodEnd = sub.current_period_end as string;
  const deps = withUsage(app);

  assert.equal(await issueRenewalInvoices.run(deps), 1);
  const draft = await renewalOf(app, sub.id);
  const finalizesAt = new Date(Date.parse(periodEnd) + HOUR).toISOString();
  assert.deepEqual(
    [
      draft.status,
      draft.number,
      draft.hosted_invoice_url,
      draft.finalizes_at,
      draft.due_at,
      draft.next_payment_attempt_at,
    ],
    ['draft', null, null, finalizesAt, finalizesAt, null],
  );
  assert.deepEqual(
    draft.lines.map((line) => [line.kind, line.amount]),
    [
      ['subscription', 5000],
      ['usage', USAGE],
    ],
  );
  assert.equal(draft.amount_due, 5000 + USAGE);
  // The API shows it (GET, the status filter); its hosted page does not exist yet.
  assert.equal((await app.request('GET', `/api/invoices/${draft.id}`)).body.status, 'draft');
  const drafts = await app.request('GET', '/api/invoices?status=draft');
  assert.deepEqual(
    drafts.body.data.map((invoice: { id: string }) => invoice.id),
    [draft.id],
  );
  assert.equal((await app.request('GET', `/i/${await hostedToken(app, draft.id)}`)).status, 404);
  // Not payable: neither out of band nor by a checkout link.
  const paid = await app.request('POST', `/api/invoices/${draft.id}/pay`, { body: { paid_out_of_band: true } });
  assert.equal(paid.status, 409, paid.text);
  assert.equal((await app.request('POST', `/api/invoices/${draft.id}/checkout`, { body: {} })).status, 409);

  // Another customer's invoice is numbered meanwhile: the draft has taken no number.
  const other = await createSubscription(app, { planId: plan.id });
  assert.equal((await invoicesOf(app, other.id))[0]!.number, 'INV-000002');

  // Just before finalizes_at: the worker neither finalizes, charges nor dunns it.
  app.clock.set(new Date(Date.parse(finalizesAt) - 1));
  const before = await runWorker(deps);
  assert.deepEqual([before.finalize_invoices, before.charge_invoices], [0, 0]);
  assert.equal(app.paystack.chargeCalls.length, 0);
  assert.equal((await renewalOf(app, sub.id)).status, 'draft');
  assert.equal((await app.request('GET', `/api/subscriptions/${sub.id}`)).body.status, 'active');

  app.clock.set(new Date(finalizesAt));
  const at = await runWorker(deps);
  assert.deepEqual([at.finalize_invoices, at.charge_invoices], [1, 1]);
  const final = await renewalOf(app, sub.id);
  assert.deepEqual(
    [final.status, final.number, final.finalizes_at, final.amount_paid],
    ['paid', 'INV-000003', null, 5000 + USAGE],
  );
  assert.match(final.hosted_invoice_url ?? '', /\/i\/[A-Za-z0-9_-]{43}$/);
  assert.equal(app.paystack.chargeCalls.length, 1);
  assert.equal(app.paystack.chargeCalls[0]!.body.amount, 5000 + USAGE);
  assert.deepEqual(
    (await invoiceEvents(app)).filter((event) => event.id === draft.id).map((event) => [event.topic, event.status]),
    [
      ['invoice.created', 'draft'],
      ['invoice.finalized', 'open'],
      ['invoice.paid', 'paid'],
    ],
  );
  const finalized = await app.request('GET', '/api/events?topic=invoice.finalized');
  assert.equal(finalized.body.data[0].data.number, 'INV-000003');
  assert.equal(finalized.body.data[0].created_at, finalizesAt);
});

for (const stop of ['cancel', 'pause'] as const) {
  test(`a subscription that ${stop === 'cancel' ? 'is cancelled' : 'is paused'} before its draft is finalized: the draft is voided, never numbered or charged`, async (t) => {
    const app = await paystackApp(t);
    const sub = (await activeAtPeriodEnd(app, (await metered(app)).id))[0]!;
    await saveTestPaymentMethod(app, sub.customer_id, 'paystack');
    const deps = withUsage(app);
    assert.equal(await issueRenewalInvoices.run(deps), 1);
    const draft = await renewalOf(app, sub.id);
    assert.equal(draft.status, 'draft');

    const stopped = await app.request('PUT', `/api/subscriptions/${sub.id}/${stop}`);
    assert.equal(stopped.status, 200, stopped.text);
    const voided = await renewalOf(app, sub.id);
    assert.deepEqual([voided.status, voided.number, voided.finalizes_at], ['void', null, null]);
    assert.deepEqual(
      (await invoiceEvents(app)).filter((event) => event.id === draft.id).map((event) => [event.topic, event.status]),
      [
        ['invoice.created', 'draft'],
        ['invoice.voided', 'void'],
      ],
    );

    app.clock.advance(2 * HOUR);
    const later = await runWorker(deps);
    assert.deepEqual([later.finalize_invoices, later.charge_invoices], [0, 0]);
    assert.equal(app.paystack.chargeCalls.length, 0);
    assert.equal((await renewalOf(app, sub.id)).status, 'void');
  });
}

test('a flat renewal is open at once, as before; INVOICE_FINALIZE_DELAY=0 finalizes a renewal with usage at once', async (t) => {
  const app = await buildTestApp(t, { env: { INVOICE_FINALIZE_DELAY: '0' } });
  const pro = await createPlan(app, { name: 'Pro', currency: 'NGN', amount: 5000 });
  const [flat, usage] = await activeAtPeriodEnd(app, pro.id, (await metered(app)).id);
  assert.equal(await issueRenewalInvoices.run(withUsage(app)), 2);
  const open = await renewalOf(app, flat!.id);
  assert.deepEqual([open.status, open.number, open.finalizes_at, open.amount_due], ['open', 'INV-000003', null, 5000]);
  assert.deepEqual(
    (await invoiceEvents(app)).filter((event) => event.id === open.id).map((event) => event.topic),
    ['invoice.created'],
  );
  const atOnce = await renewalOf(app, usage!.id);
  assert.deepEqual(
    [atOnce.status, atOnce.number, atOnce.finalizes_at, atOnce.amount_due],
    ['open', 'INV-000004', null, 5000 + USAGE],
  );
  assert.deepEqual(
    (await invoiceEvents(app)).filter((event) => event.id === atOnce.id).map((event) => [event.topic, event.status]),
    [
      ['invoice.created', 'draft'],
      ['invoice.finalized', 'open'],
    ],
  );
});

test('POST …/finalize finalizes a draft now (admin only, 409 otherwise); a voided draft never takes a number', async (t) => {
  const app = await buildTestApp(t);
  const plan = await metered(app);
  const [voided, finalized] = await activeAtPeriodEnd(app, plan.id, plan.id);
  assert.equal(await issueRenewalInvoices.run(withUsage(app)), 2);
  const toVoid = await renewalOf(app, voided!.id);
  const toFinalize = await renewalOf(app, finalized!.id);

  const voidRes = await app.request('POST', `/api/invoices/${toVoid.id}/void`);
  assert.equal(voidRes.status, 200, voidRes.text);
  assert.deepEqual(
    [voidRes.body.status, voidRes.body.number, voidRes.body.finalizes_at, voidRes.body.hosted_invoice_url],
    ['void', null, null, null],
  );
  const notDraft = await app.request('POST', `/api/invoices/${toVoid.id}/finalize`);
  assert.equal(notDraft.status, 409);
  assert.equal(notDraft.body.message, 'cannot be finalized in its current state');

  const writer = await app.request('POST', '/api/api-keys', { body: { name: 'writer', scope: 'write' } });
  assert.equal(writer.status, 201, writer.text);
  const forbidden = await app.request('POST', `/api/invoices/${toFinalize.id}/finalize`, { key: writer.body.key });
  assert.equal(forbidden.status, 403);
  assert.equal((await app.request('GET', `/api/invoices/${toFinalize.id}`)).body.status, 'draft');

  const res = await app.request('POST', `/api/invoices/${toFinalize.id}/finalize`);
  assert.equal(res.status, 200, res.text);
  // The first invoices took 000001 and 000002; the voided draft took none.
  assert.deepEqual(
    [res.body.status, res.body.number, res.body.finalizes_at, res.body.next_payment_attempt_at],
    ['open', 'INV-000003', null, null],
  );
  assert.equal((await app.request('POST', `/api/invoices/${toFinalize.id}/finalize`)).status, 409);
  assert.equal((await app.request('POST', '/api/invoices/inv_unknown/finalize')).status, 404);
  // Nothing left for the worker at the drafts' finalizes_at.
  app.clock.advance(HOUR);
  assert.equal(await finalizeInvoices.run(app.deps), 0);
  assert.deepEqual(
    (await invoiceEvents(app)).filter((event) => event.id === toFinalize.id).map((event) => event.topic),
    ['invoice.created', 'invoice.finalized'],
  );
  // Open now: payable like any open invoice.
  const paid = await app.request('POST', `/api/invoices/${toFinalize.id}/pay`, { body: { paid_out_of_band: true } });
  assert.equal(paid.status, 200, paid.text);
  assert.equal(paid.body.status, 'paid');
});

test('a payment arriving while the only unpaid invoice is a draft does not settle it: it pays the next period in advance', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const [sub] = await activeAtPeriodEnd(app, (await metered(app)).id);
  assert.equal(await issueRenewalInvoices.run(withUsage(app)), 1);
  const draft = await renewalOf(app, sub!.id);

  // Naming the draft does not make it payable either.
  const report = await reportPayment(app, { subscriptionId: sub!.id, amount: 5000, invoiceId: draft.id });
  assert.equal(report.status, 200);
  const invoices = await invoicesOf(app, sub!.id);
  assert.equal(invoices.length, 3);
  const [, stillDraft, advance] = invoices;
  assert.deepEqual([stillDraft!.id, stillDraft!.status, stillDraft!.amount_paid], [draft.id, 'draft', 0]);
  assert.deepEqual(
    [advance!.status, advance!.period_start, advance!.amount_paid, advance!.number],
    ['paid', draft.period_end, 5000, 'INV-000002'],
  );
  // The draft is numbered after the invoice paid in advance, when it is finalized.
  app.clock.set(new Date(draft.finalizes_at!));
  assert.equal(await finalizeInvoices.run(app.deps), 1);
  const final = (await invoicesOf(app, sub!.id))[1]!;
  assert.deepEqual([final.status, final.number, final.amount_remaining], ['open', 'INV-000003', 5000 + USAGE]);
});

test('a test clock finalizes its drafts at its own time when advanced', async (t) => {
  const app = await buildTestApp(t, { env: { TEST_CLOCKS: 'true' } });
  const failLog = { error: (object: object) => assert.fail(`worker job failed: ${String(Object.values(object)[0])}`) };
  const worker = new Worker(withUsage(app), [advanceTestClocks(CLOCK_AWARE_JOBS)], failLog);
  const plan = await metered(app);
  const clock = (await app.request('POST', '/api/test-clocks', { body: { frozen_time: '2026-01-01T00:00:00.000Z' } }))
    .body;
  const customer = await app.request('POST', '/api/customers', {
    body: { email: 'clock@example.com', test_clock: clock.id },
  });
  // A trial: its first invoice is the renewal at the trial's end, 2026-01-08.
  const sub = await createSubscription(app, { customerId: customer.body.id, planId: plan.id, trialPeriodDays: 7 });
  const trialEnd = '2026-01-08T00:00:00.000Z';
  const advance = async (to: string) => {
    const res = await app.request('POST', `/api/test-clocks/${clock.id}/advance`, { body: { frozen_time: to } });
    assert.equal(res.status, 202, res.text);
    await worker.runOnce();
  };

  await advance('2026-01-08T00:30:00.000Z');
  const [draft] = await invoicesOf(app, sub.id);
  assert.deepEqual(
    [draft!.status, draft!.number, draft!.period_start, draft!.finalizes_at],
    ['draft', null, trialEnd, '2026-01-08T01:00:00.000Z'],
  );
  // Real time (2026-01-15) is past finalizes_at, but the real-time worker leaves clock rows alone.
  assert.equal(await finalizeInvoices.run(withUsage(app)), 0);

  await advance('2026-01-09T00:00:00.000Z');
  const [final] = await invoicesOf(app, sub.id);
  assert.deepEqual(
    [final!.status, final!.number, final!.updated_at],
    ['open', `INV-${clock.id}-000001`, '2026-01-08T01:00:00.000Z'],
  );
});

test(
  'two workers on two connections finalize each due draft exactly once, with consecutive numbers',
  { skip: !ON_POSTGRES && 'PostgreSQL only: SQLite in memory cannot be opened by a second handle' },
  async (t) => {
    const app = await buildTestApp(t);
    const second = await connectSecondInstance(app);
    t.after(() => second.close());
    const customer = await createCustomer(app);
    const plan = await metered(app);
    const count = 30;
    let periodEnd = '';
    for (let i = 0; i < count; i++) {
      const created = await createSubscription(app, { customerId: customer.id, planId: plan.id });
      const sub = await app.deps.db.transaction().execute((trx) => applySuccessfulPayment(trx, app.deps, created.id));
      periodEnd = sub.current_period_end!;
    }
    app.clock.set(new Date(periodEnd));
    assert.equal(await issueRenewalInvoices.run(withUsage(app)), count);
    assert.equal(await finalizeInvoices.run(app.deps), 0, 'not due before period end + INVOICE_FINALIZE_DELAY');
    app.clock.advance(HOUR);
    const [a, b] = await Promise.all([finalizeInvoices.run(app.deps), finalizeInvoices.run(second)]);
    assert.equal(a + b, count);
    const renewals = await app.deps.db
      .selectFrom('invoices')
      .select(['status', 'number'])
      .where('number', '>', `INV-${String(count).padStart(6, '0')}`)
      .orderBy('number')
      .execute();
    assert.deepEqual(
      renewals.map((row) => [row.status, row.number]),
      Array.from({ length: count }, (_, i) => ['open', `INV-${String(count + i + 1).padStart(6, '0')}`]),
    );
    const events = await app.request('GET', `/api/events?topic=invoice.finalized&limit=100`);
    assert.equal(events.body.data.length, count);
    assert.equal(await finalizeInvoices.run(second), 0);
  },
);

test('finalize now racing void, then racing the finalize job (two instances on PostgreSQL): each draft is finalized once or voided, numbers stay gap-free, the loser gets a 409', async (t) => {
  const app = await buildTestApp(t);
  const second = ON_POSTGRES ? await connectSecondInstance(app) : app.deps;
  if (ON_POSTGRES) t.after(() => second.close());
  const plan = await metered(app);
  const count = 16;
  const subs = await activeAtPeriodEnd(app, ...Array.from({ length: count }, () => plan.id));
  assert.equal(await issueRenewalInvoices.run(withUsage(app)), count);
  const drafts = await Promise.all(subs.map((sub) => renewalOf(app, sub.id)));
  assert.ok(drafts.every((draft) => draft.status === 'draft'));
  const againstVoid = drafts.slice(0, count / 2);
  const againstJob = drafts.slice(count / 2);

  const finalizeNow = async (id: string) => {
    const res = await app.request('POST', `/api/invoices/${id}/finalize`);
    assert.ok(res.status === 200 || res.status === 409, `finalize ${id}: ${res.status} ${res.text}`);
    return res.status;
  };
  const voidOnSecond = (id: string) =>
    voidInvoice(second, id).then(
      () => 200,
      (error: unknown) => {
        assert.ok(error instanceof StateConflictError, String(error));
        return 409;
      },
    );
  // Not due yet: the admin's finalize against a void on the other instance, half of them
  // asked in each order.
  const raced = await Promise.all(
    againstVoid.map((draft, i) =>
      i % 2 === 0
        ? Promise.all([finalizeNow(draft.id), voidOnSecond(draft.id)])
        : Promise.all([voidOnSecond(draft.id), finalizeNow(draft.id)]).then(([v, f]) => [f, v] as const),
    ),
  );
  // Due: the admin's finalize against the job on both instances.
  app.clock.advance(HOUR);
  const asked = againstJob.map((draft) => finalizeNow(draft.id));
  // The jobs start once the first finalize answered, while the others are in flight.
  await asked[0];
  const [finalizes, ...jobs] = await Promise.all([
    Promise.all(asked),
    finalizeInvoices.run(second),
    finalizeInvoices.run(app.deps),
  ]);

  const finalizedEvents = (await invoiceEvents(app)).filter((event) => event.topic === 'invoice.finalized');
  const after = await Promise.all(drafts.map((draft) => invoiceById(app, draft.id)));
  for (const invoice of after) {
    const events = finalizedEvents.filter((event) => event.id === invoice.id).length;
    assert.equal(events, invoice.number === null ? 0 : 1, `${invoice.id}: finalized once or never`);
  }
  for (const [i, [finalized, voided]] of raced.entries()) {
    const invoice = after[i]!;
    // Void succeeds from draft and from open alike: it never loses.
    assert.equal(voided, 200);
    assert.equal(invoice.status, 'void');
    // Finalized first (a number, then voided) or voided first (no number, the finalize refused).
    assert.equal(invoice.number === null, finalized === 409, `${invoice.id}: ${finalized} ${invoice.number}`);
  }
  for (const [i, status] of finalizes.entries()) {
    assert.equal(after[count / 2 + i]!.status, 'open');
    assert.ok(status === 200 || status === 409);
  }
  assert.equal(jobs[0]! + jobs[1]! + finalizes.filter((status) => status === 200).length, count / 2);
  // The first invoices took INV-000001 … INV-<count>; the finalized drafts the next ones, no gap.
  const numbers = after.flatMap((invoice) => (invoice.number === null ? [] : [invoice.number])).sort();
  assert.deepEqual(
    numbers,
    Array.from({ length: numbers.length }, (_, i) => `INV-${String(count + i + 1).padStart(6, '0')}`),
  );
  const sequence = await app.deps.db.selectFrom('invoice_numbers').select('last_number').executeTakeFirstOrThrow();
  assert.equal(Number(sequence.last_number), count + numbers.length);
});
