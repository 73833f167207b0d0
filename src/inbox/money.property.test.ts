// The money path as properties (SPEC §4, §5): random
// histories of provider reports for a few subscriptions — successes, failures, partial and
// full refunds, refund reversals, redeliveries, one payment reported by two Stripe event
// types — posted in a random order, some at once, through the real POST /api/notify. After
// each history the stored state must be what the reports say, whatever the arrival order.
//
// Runs MONEY_PROPERTY_RUNS histories per database (default 100); a failure prints
// fast-check's seed and path, and MONEY_PROPERTY_SEED=<seed> replays it (MONEY_PROPERTY_SHRINK=1
// also shrinks it to a smallest failing history).
import assert from 'node:assert/strict';
import test from 'node:test';
import fc from 'fast-check';
import { fanOutEvents } from '../modules/webhooks/webhooks.fan-out.ts';
import { periodAfterPayment } from '../modules/subscriptions/subscriptions.billing-period.ts';
import { nextStatus, type SubscriptionStatus } from '../modules/subscriptions/subscriptions.status.ts';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import { createCustomer, createPlan, createWebhookEndpoint } from '../../test/helpers/factories.ts';
import {
  arrivalOrder,
  type History,
  type ModelPayment,
  money,
  type Report,
  reportsOf,
} from '../../test/helpers/money-model.ts';
import { PROVIDER_ENV, postPaystack, postStripe } from '../../test/helpers/provider-events.ts';
import type { ProviderName } from '../shared/provider-names.ts';

const RUNS = Number(process.env.MONEY_PROPERTY_RUNS ?? 100);
const SEED = process.env.MONEY_PROPERTY_SEED === undefined ? undefined : Number(process.env.MONEY_PROPERTY_SEED);

interface Subscription {
  id: string;
  customerId: string;
  provider: ProviderName;
  currency: string;
  interval: 'month';
  start: string;
  end: string;
}

async function post(app: TestApp, report: Report) {
  return report.provider === 'paystack' ? postPaystack(app, report.body) : postStripe(app, report.body);
}

/** Posts `reports` in order; runs of `together` neighbours go at once. */
async function deliver(app: TestApp, reports: readonly Report[], together: readonly number[]) {
  const answers: { report: Report; status: number }[] = [];
  let at = 0;
  let group = 0;
  while (at < reports.length) {
    const size = Math.max(1, together[group++ % Math.max(1, together.length)] ?? 1);
    const batch = reports.slice(at, at + size);
    at += size;
    const statuses = await Promise.all(batch.map(async (report) => (await post(app, report)).status));
    batch.forEach((report, i) => answers.push({ report, status: statuses[i]! }));
  }
  return answers;
}

/** The subscription per the transition table, folding the payments' outcomes in provider-time order. */
function expectedSubscription(sub: Subscription, index: number, payments: readonly ModelPayment[], now: Date) {
  const facts: { at: number; event: 'payment_succeeded' | 'payment_failed' }[] = [];
  for (const payment of payments) {
    if (payment.subscription !== index) continue;
    if (payment.failedAt !== null) facts.push({ at: payment.failedAt, event: 'payment_failed' });
    if (payment.succeededAt !== null) facts.push({ at: payment.succeededAt, event: 'payment_succeeded' });
  }
  facts.sort((a, b) => a.at - b.at);
  let status: SubscriptionStatus = 'trialing';
  let start = new Date(sub.start);
  let end = new Date(sub.end);
  for (const fact of facts) {
    const transition = nextStatus(status, fact.event);
    if (!transition) continue;
    if (fact.event === 'payment_succeeded') {
      const period = periodAfterPayment({
        active: status === 'active',
        now,
        currentPeriodStart: start,
        currentPeriodEnd: end,
        interval: sub.interval,
        intervalCount: 1,
      });
      start = period.start;
      end = period.end;
    }
    status = transition.to;
  }
  return { status, current_period_end: end.toISOString() };
}

async function checkHistory(app: TestApp, subs: readonly Subscription[], history: History) {
  const { db } = app.deps;
  const { payments, reports } = reportsOf(history, subs);
  const redelivered = history.redeliver.map((i) => reports[i % reports.length]!);
  const answers = await deliver(app, [...arrivalOrder(reports, history.order), ...redelivered], history.together);

  // Every acknowledged event is in the inbox exactly once; a 5xx only for one not stored.
  for (const { report, status } of answers) {
    const rows = await db
      .selectFrom('provider_events')
      .select(['status', 'next_attempt_at', 'error'])
      .where('provider', '=', report.provider)
      .where('payload', '=', report.text)
      .execute();
    if (status === 200) assert.equal(rows.length, 1, `${report.label}: stored once`);
    else assert.equal(rows.length, 0, `${report.label}: answered ${status} but stored`);
    for (const row of rows) {
      assert.notEqual(row.status, 'received', `${report.label}: processed`);
      assert.ok(
        !(row.status === 'failed' && row.next_attempt_at !== null),
        `${report.label}: no retryable failure (${row.error})`,
      );
    }
  }

  const now = app.clock.now();
  for (const payment of payments) {
    const rows = await db
      .selectFrom('payments')
      .selectAll()
      .where('provider', '=', payment.provider)
      .where('provider_reference', '=', payment.reference)
      .execute();
    assert.equal(rows.length, 1, `${payment.reference}: one payment`);
    const row = rows[0]!;
    // Amount and currency from one report: the success's when it succeeded.
    assert.equal(
      row.amount,
      payment.succeededAt !== null ? payment.amount : payment.failedAmount,
      `${payment.reference}: amount`,
    );
    assert.equal(row.currency, payment.currency, `${payment.reference}: currency`);
    if (payment.succeededAt === null) {
      assert.equal(row.status, 'failed', `${payment.reference}: failed`);
      continue;
    }
    const refunds = await db.selectFrom('refunds').selectAll().where('payment_id', '=', row.id).execute();
    const succeeded = refunds.filter((refund) => refund.status === 'succeeded');
    const refundedSum = succeeded.reduce((sum, refund) => sum + refund.amount, 0);
    // amount_refunded = the sum of succeeded refunds ≤ amount.
    assert.equal(row.amount_refunded, refundedSum, `${payment.reference}: amount_refunded is the refunds' sum`);
    assert.ok(refundedSum <= row.amount, `${payment.reference}: refunds within the amount`);
    const expectedStatus =
      refundedSum === 0 ? 'succeeded' : refundedSum >= row.amount ? 'refunded' : 'partially_refunded';
    assert.equal(row.status, expectedStatus, `${payment.reference}: status`);
    for (const refund of payment.refunds) {
      const stored = refunds.find((r) => r.provider_reference === refund.reference);
      if (refund.fails && stored) assert.equal(stored.status, 'failed', `${refund.reference}: reversed`);
    }
    // Within the amount, every refund is recorded exactly as reported.
    if (payment.refunds.reduce((sum, refund) => sum + refund.amount, 0) <= payment.amount) {
      for (const refund of payment.refunds) {
        const stored = refunds.find((r) => r.provider_reference === refund.reference);
        assert.ok(stored, `${refund.reference}: recorded`);
        assert.equal(stored.amount, refund.amount);
        assert.equal(stored.status, refund.fails ? 'failed' : 'succeeded', `${refund.reference}: status`);
      }
    }
    // The last payment event shows the payment as stored; each event is a change.
    const events = await db
      .selectFrom('events')
      .select(['topic', 'data'])
      .where('topic', 'like', 'payment.%')
      .where('data', 'like', `%${row.id}%`)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    const shown = events
      .map((event) => JSON.parse(event.data) as Record<string, unknown>)
      .filter((data) => data.id === row.id);
    assert.ok(shown.length > 0, `${payment.reference}: has events`);
    const last = shown.at(-1)!;
    for (const field of [
      'status',
      'amount',
      'amount_refunded',
      'currency',
      'customer_id',
      'subscription_id',
    ] as const) {
      assert.deepEqual(last[field], row[field], `${payment.reference}: last event ${field}`);
    }
  }

  for (const [index, sub] of subs.entries()) {
    const row = await db.selectFrom('subscriptions').selectAll().where('id', '=', sub.id).executeTakeFirstOrThrow();
    const expected = expectedSubscription(sub, index, payments, now);
    assert.equal(row.status, expected.status, `${sub.id}: status`);
    assert.equal(row.current_period_end, expected.current_period_end, `${sub.id}: period end`);
    const open = await db
      .selectFrom('dunning_cases')
      .select(['amount_due'])
      .where('subscription_id', '=', sub.id)
      .where('status', '=', 'open')
      .execute();
    assert.equal(
      open.length,
      row.status === 'past_due' ? 1 : 0,
      `${sub.id}: an open dunning case exactly while past_due`,
    );
    for (const dunningCase of open) assert.ok(dunningCase.amount_due > 0, `${sub.id}: a case owes money`);
    // SPEC §9: these subscriptions never owe an invoice (trials, no worker), so every success
    // bought a period and that period's invoice, created and settled at once by it.
    const invoices = await db.selectFrom('invoices').selectAll().where('subscription_id', '=', sub.id).execute();
    const successes = payments.filter((p) => p.subscription === index && p.succeededAt !== null);
    assert.equal(invoices.length, successes.length, `${sub.id}: one invoice per period bought`);
    assert.equal(new Set(invoices.map((i) => i.period_start)).size, invoices.length, `${sub.id}: one per period`);
    for (const invoice of invoices) {
      assert.equal(invoice.status, 'paid', `${invoice.id}: paid at once`);
      assert.equal(Number(invoice.amount_paid), Number(invoice.amount_due), `${invoice.id}: settled in full`);
    }
    const linked = await db
      .selectFrom('payments')
      .select('invoice_id')
      .where('subscription_id', '=', sub.id)
      .where('status', '!=', 'failed')
      .execute();
    assert.deepEqual(
      new Set(linked.map((p) => p.invoice_id)),
      new Set(invoices.map((i) => i.id)),
      `${sub.id}: each paid payment settled its own invoice`,
    );
    const events = await db
      .selectFrom('events')
      .select(['data'])
      .where('topic', 'like', 'subscription.%')
      .where('data', 'like', `%${sub.id}%`)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    const shown = events
      .map((event) => JSON.parse(event.data) as Record<string, unknown>)
      .filter((data) => data.id === sub.id);
    const last = shown.at(-1)!;
    assert.equal(last.status, row.status, `${sub.id}: last event status`);
    assert.equal(last.current_period_end, row.current_period_end, `${sub.id}: last event period end`);
    for (let i = 1; i < shown.length; i += 1) {
      const [before, after] = [shown[i - 1]!, shown[i]!];
      assert.ok(
        before.status !== after.status ||
          before.current_period_end !== after.current_period_end ||
          before.cancel_at_period_end !== after.cancel_at_period_end,
        `${sub.id}: event ${i} records a change`,
      );
    }
  }
}

/** Every event fans out to the catch-all endpoint exactly once. */
async function checkDeliveries(app: TestApp, endpointId: string) {
  const { db } = app.deps;
  while ((await fanOutEvents(db, app.clock, 1000)) > 0);
  const events = await db.selectFrom('events').select('id').where('topic', '!=', 'webhook.test').execute();
  const deliveries = await db
    .selectFrom('webhook_deliveries')
    .select('event_id')
    .where('endpoint_id', '=', endpointId)
    .execute();
  assert.equal(deliveries.length, events.length, 'one delivery per event');
  assert.deepEqual(new Set(deliveries.map((d) => d.event_id)), new Set(events.map((e) => e.id)));
}

test('every history of provider reports ends in the state its reports describe, whatever the arrival order', async (t) => {
  const app = await buildTestApp(t, { env: { ...PROVIDER_ENV, WEBHOOK_ALLOW_PRIVATE_CIDRS: '127.0.0.0/8' } });
  const endpoint = await createWebhookEndpoint(app, 'http://127.0.0.1:9/hooks');
  const plans = {
    paystack: (await createPlan(app, { currency: 'NGN', amount: 500000 })).id as string,
    stripe: (await createPlan(app, { currency: 'USD', amount: 2000 })).id as string,
  };

  async function subscribe(provider: ProviderName): Promise<Subscription> {
    const customer = await createCustomer(app);
    const res = await app.request('POST', '/api/subscriptions', {
      body: { customer_id: customer.id, plan_id: plans[provider], trial_period_days: 14 },
    });
    assert.equal(res.status, 201, res.text);
    return {
      id: res.body.id,
      customerId: customer.id,
      provider,
      currency: provider === 'paystack' ? 'NGN' : 'USD',
      interval: 'month',
      start: res.body.current_period_start,
      end: res.body.current_period_end,
    };
  }

  await fc.assert(
    fc.asyncProperty(money(app.clock.now()), async (history) => {
      const subs = [];
      for (const provider of history.subscriptions) subs.push(await subscribe(provider));
      await checkHistory(app, subs, history);
    }),
    { numRuns: RUNS, seed: SEED, endOnFailure: process.env.MONEY_PROPERTY_SHRINK !== '1' },
  );
  await checkDeliveries(app, endpoint.id);
});
