// The money path as properties (SPEC §4, §5, §9, §12): random
// histories of provider reports for a few subscriptions — successes of any amount, failures,
// partial and full refunds, refund reversals, redeliveries, one payment reported by two Stripe
// event types — posted in a random order, some at once, through the real POST /api/notify.
// After each history the stored state must be what the reports say, whatever the arrival
// order: every payment once, refunds within it, the money conserved between payments,
// invoices and the credit balance, the invoices on the billing cycle anchor.
//
// Runs MONEY_PROPERTY_RUNS histories per database (default 100); a failure prints
// fast-check's seed and path, and MONEY_PROPERTY_SEED=<seed> replays it (MONEY_PROPERTY_SHRINK=1
// also shrinks it to a smallest failing history).
import assert from 'node:assert/strict';
import test from 'node:test';
import fc from 'fast-check';
import { fanOutEvents } from '../modules/webhooks/webhooks.fan-out.ts';
import { nextPeriodOnAnchor } from '../modules/subscriptions/subscriptions.billing-period.ts';
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

/** The plans' prices (minor units): a success of at least this much always pays a whole invoice. */
const PRICES = { NGN: 500000, USD: 2000 } as const;

/**
 * The status per the transition table, folding the payments' outcomes in provider-time order
 * (SPEC §5 stale reports) — when every success pays an invoice. That holds when no success is
 * below the price: each finds nothing payable (no partly paid invoice can exist), so it issues
 * the next period's invoice, the credit taken first, and pays it in full. Null otherwise: which
 * success completes a partly paid invoice then depends on the arrival order.
 */
function expectedStatus(
  sub: Subscription,
  index: number,
  payments: readonly ModelPayment[],
): SubscriptionStatus | null {
  const facts: { at: number; event: 'payment_succeeded' | 'payment_failed' }[] = [];
  for (const payment of payments) {
    if (payment.subscription !== index) continue;
    if (payment.succeededAt !== null && payment.amount < PRICES[sub.currency as keyof typeof PRICES]) return null;
    if (payment.failedAt !== null) facts.push({ at: payment.failedAt, event: 'payment_failed' });
    if (payment.succeededAt !== null) facts.push({ at: payment.succeededAt, event: 'payment_succeeded' });
  }
  facts.sort((a, b) => a.at - b.at);
  let status: SubscriptionStatus = 'trialing';
  for (const fact of facts) status = nextStatus(status, fact.event)?.to ?? status;
  return status;
}

/**
 * The money of one subscription's customer (SPEC §9, §12, §14), whatever the order: what its
 * succeeded payments brought is what its invoices took plus the credit they left over; the
 * credit its invoices took left the balance; the balance is the ledger's sum and never below 0;
 * its invoices are the periods after the trial, one after the other on the anchor, all paid
 * but the last, which may be partly paid.
 */
async function checkMoney(app: TestApp, sub: Subscription, successes: number) {
  const { db } = app.deps;
  const invoices = await db
    .selectFrom('invoices')
    .selectAll()
    .where('subscription_id', '=', sub.id)
    .orderBy('period_start')
    .execute();
  const paid = await db
    .selectFrom('payments')
    .select(['id', 'amount', 'invoice_id'])
    .where('subscription_id', '=', sub.id)
    .where('status', '!=', 'failed')
    .execute();
  const ledger = await db
    .selectFrom('customer_balance_transactions')
    .selectAll()
    .where('customer_id', '=', sub.customerId)
    .execute();
  const sum = (values: readonly (number | string)[]) => values.reduce<number>((total, v) => total + Number(v), 0);
  const overpaid = sum(ledger.filter((t) => t.kind === 'overpayment').map((t) => t.amount));
  const taken = sum(ledger.filter((t) => t.kind === 'applied_to_invoice').map((t) => t.amount));
  assert.ok(
    ledger.every((t) => t.currency === sub.currency),
    `${sub.id}: credit in the plan's currency`,
  );
  assert.equal(
    sum(paid.map((p) => p.amount)),
    sum(invoices.map((i) => i.amount_paid)) + overpaid,
    `${sub.id}: payments = what invoices took + the credit left over`,
  );
  assert.equal(sum(invoices.map((i) => i.applied_balance)) + taken, 0, `${sub.id}: credit applied = credit taken`);
  const balance = overpaid + taken;
  assert.ok(balance >= 0, `${sub.id}: balance ${balance} ≥ 0`);
  const shown = (await app.request('GET', `/api/customers/${sub.customerId}`)).body.balances;
  assert.deepEqual(shown, balance === 0 ? {} : { [sub.currency]: balance }, `${sub.id}: the balance shown`);
  assert.ok(invoices.length <= successes, `${sub.id}: no invoice without a payment that issued it`);
  let start = sub.end;
  for (const [i, invoice] of invoices.entries()) {
    const period = nextPeriodOnAnchor({
      anchor: new Date(sub.end),
      after: new Date(start),
      interval: sub.interval,
      intervalCount: 1,
    });
    assert.deepEqual(
      [invoice.period_start, invoice.period_end],
      [start, period.end.toISOString()],
      `${invoice.id}: the next period on the anchor`,
    );
    start = invoice.period_end;
    const due = Number(invoice.amount_due);
    const amountPaid = Number(invoice.amount_paid);
    assert.equal(Number(invoice.total), Number(invoice.applied_balance) + due, `${invoice.id}: total = credit + due`);
    assert.equal(invoice.status === 'paid', amountPaid === due, `${invoice.id}: paid iff nothing remains`);
    if (i < invoices.length - 1) assert.equal(invoice.status, 'paid', `${invoice.id}: only the last may be open`);
    else if (invoice.status !== 'paid') assert.ok(amountPaid > 0 && amountPaid < due, `${invoice.id}: partly paid`);
  }
  // Every succeeded payment settled an invoice, and every invoice was issued for a payment.
  assert.deepEqual(
    new Set(paid.map((p) => p.invoice_id)),
    new Set(invoices.map((i) => i.id)),
    `${sub.id}: payments and the invoices they settled`,
  );
  return invoices;
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
    const successes = payments.filter((p) => p.subscription === index && p.succeededAt !== null);
    const failures = payments.filter((p) => p.subscription === index && p.failedAt !== null);
    const invoices = await checkMoney(app, sub, successes.length);
    const anyPaid = invoices.some((invoice) => invoice.status === 'paid');
    const expected = expectedStatus(sub, index, payments);
    if (expected !== null) {
      assert.equal(row.status, expected, `${sub.id}: status`);
      // SPEC §12: every success found nothing payable, so it issued the next period's invoice and paid it.
      assert.equal(invoices.length, successes.length, `${sub.id}: one invoice per success`);
      assert.ok(anyPaid || successes.length === 0);
    } else if (failures.length === 0) {
      assert.equal(row.status, anyPaid ? 'active' : 'trialing', `${sub.id}: active once an invoice is paid`);
    } else {
      // A failure report of a payment that succeeded too may arrive after the success: then it
      // changes nothing. Only a payment that never succeeded surely ends the trial.
      const standalone = failures.some((p) => p.succeededAt === null);
      const possible = standalone ? ['active', 'past_due'] : ['trialing', 'active', 'past_due'];
      assert.ok(possible.includes(row.status), `${sub.id}: ${row.status}`);
      if (row.status === 'active') assert.ok(anyPaid, `${sub.id}: active only once an invoice is paid`);
    }
    // Payments move no period: the trial's stays until a renewal (SPEC §4 billing cycle anchor).
    assert.equal(row.current_period_end, sub.end, `${sub.id}: period end`);
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
    const events = await db
      .selectFrom('events')
      .select(['topic', 'data'])
      .where('topic', 'like', 'subscription.%')
      .where('data', 'like', `%${sub.id}%`)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    const shown = events
      .map((event) => ({ topic: event.topic, data: JSON.parse(event.data) as Record<string, unknown> }))
      .filter(({ data }) => data.id === sub.id);
    const last = shown.at(-1)!.data;
    assert.equal(last.status, row.status, `${sub.id}: last event status`);
    assert.equal(last.current_period_end, row.current_period_end, `${sub.id}: last event period end`);
    for (let i = 1; i < shown.length; i += 1) {
      const [before, after] = [shown[i - 1]!.data, shown[i]!.data];
      // subscription.renewed also tells an invoice paid while the subscription stays active.
      assert.ok(
        shown[i]!.topic === 'subscription.renewed' ||
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
