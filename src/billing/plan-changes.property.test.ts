// The money property of plan changes (SPEC §13), on both databases and a test clock: for
// random sequences of changes at random times — plan and quantity, prorated now into the next
// invoice or invoiced at once, or scheduled for the period end — and advances of the clock,
// everything invoiced for the subscription (plus the proration items still waiting) equals
// the integral of price × quantity over its periods, within one minor unit per line; every
// preview shows the lines its change makes; and there is one invoice per period, back to back.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import { earliest, REAL_TIME, whereInScope } from '../db/scope.ts';
import { nextPeriodOnAnchor } from '../modules/subscriptions/subscriptions.billing-period.ts';
import type { Job } from '../worker/job.ts';
import { CLOCK_AWARE_JOBS } from '../worker/jobs.ts';
import { Worker } from '../worker/runner.ts';
import { advanceTestClocks } from '../worker/test-clocks.jobs.ts';
import { payInvoiceOutOfBand } from './pay-out-of-band.ts';

const HOUR = 3_600_000;
const T0 = '2026-03-01T00:00:00.000Z';
const PRICES = [1000, 1550, 2999, 4000];
const failLog = { error: (object: object) => assert.fail(`worker job failed: ${String(Object.values(object)[0])}`) };

/** Pays every open invoice of the clock once due (out of band): the subscription stays active. */
const payDueInvoices: Job = {
  name: 'test_pay_due_invoices',
  batchSize: 10,
  run: async (deps, scope = REAL_TIME) => {
    const rows = await whereInScope(deps.db.selectFrom('invoices').select('id'), 'invoices.test_clock_id', scope)
      .where('status', '=', 'open')
      .where('due_at', '<=', deps.clock.now().toISOString())
      .limit(10)
      .execute();
    for (const row of rows) await payInvoiceOutOfBand(deps.db, deps, row.id, { paid_out_of_band: true });
    return rows.length;
  },
  nextDueAt: async (deps, scope, after) => {
    const row = await whereInScope(
      deps.db.selectFrom('invoices').select((eb) => eb.fn.min('due_at').as('due')),
      'invoices.test_clock_id',
      scope,
    )
      .where('status', '=', 'open')
      .where('due_at', '>', after.toISOString())
      .executeTakeFirst();
    return earliest([row?.due]);
  },
};

type Op =
  | { kind: 'advance'; hours: number }
  | { kind: 'change'; plan: number; quantity: number; how: 'create_prorations' | 'always_invoice' | 'period_end' };

const change = fc.record({
  kind: fc.constant('change' as const),
  plan: fc.integer({ min: 0, max: PRICES.length - 1 }),
  quantity: fc.integer({ min: 1, max: 7 }),
  how: fc.constantFrom('create_prorations' as const, 'always_invoice' as const, 'period_end' as const),
});
const advance = fc.record({ kind: fc.constant('advance' as const), hours: fc.integer({ min: 1, max: 40 * 24 }) });
/** Changes, each followed by an advance of the clock (hours to 40 days): periods end between them. */
const ops: fc.Arbitrary<Op[]> = fc
  .array(fc.tuple(change, fc.option(advance, { freq: 4 })), { minLength: 1, maxLength: 5 })
  .map((pairs) => pairs.flatMap(([step, after]) => (after === null ? [step] : [step, after])));

interface Line {
  kind: string;
  amount: number;
  description: string;
}

/** What the model expects: the integral of price × quantity, each period's share by its length. */
class Model {
  plan: number;
  quantity: number;
  start: number;
  end: number;
  /** When the current plan and quantity began within the current period. */
  since: number;
  pending: { plan: number; quantity: number } | null = null;
  billed = 0;
  readonly anchor: Date;
  constructor(plan: number, quantity: number, start: number, end: number) {
    this.plan = plan;
    this.quantity = quantity;
    this.start = start;
    this.end = end;
    this.since = start;
    this.anchor = new Date(start);
  }
  /** Bills [since, until) of the current period at the current price × quantity. */
  private close(until: number): void {
    this.billed += (PRICES[this.plan]! * this.quantity * (until - this.since)) / (this.end - this.start);
    this.since = until;
  }
  advanceTo(time: number): void {
    while (this.end <= time) {
      this.close(this.end);
      if (this.pending) ({ plan: this.plan, quantity: this.quantity } = this.pending);
      this.pending = null;
      const next = nextPeriodOnAnchor({
        anchor: this.anchor,
        after: new Date(this.end),
        interval: 'month',
        intervalCount: 1,
      });
      [this.start, this.end, this.since] = [next.start.getTime(), next.end.getTime(), next.start.getTime()];
    }
  }
  changeNow(at: number, plan: number, quantity: number): void {
    this.close(at);
    [this.plan, this.quantity, this.pending] = [plan, quantity, null];
  }
  /** Everything billed through the end of the current period (invoiced in advance). */
  total(): number {
    const saved = [this.billed, this.since];
    this.close(this.end);
    const total = this.billed;
    [this.billed, this.since] = saved as [number, number];
    return total;
  }
}

test('random plan changes on a test clock: invoiced = ∫ price × quantity (±1 per line), preview = change, one invoice per period', async (t) => {
  const app = await buildTestApp(t, { env: { TEST_CLOCKS: 'true' } });
  const plans: string[] = [];
  for (const [i, amount] of PRICES.entries()) {
    const res = await app.request('POST', '/api/plans', {
      body: { name: `P${i}`, amount, currency: 'USD', interval: 'month' },
    });
    plans.push(res.body.id);
  }
  const worker = new Worker(app.deps, [advanceTestClocks([...CLOCK_AWARE_JOBS, payDueInvoices])], failLog);

  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 0, max: 3 }),
      fc.integer({ min: 1, max: 5 }),
      ops,
      async (plan0, quantity0, ops) => {
        const clock = (await app.request('POST', '/api/test-clocks', { body: { frozen_time: T0 } })).body;
        const customer = (
          await app.request('POST', '/api/customers', {
            body: { email: `p${Math.random()}@example.com`, test_clock: clock.id },
          })
        ).body;
        const sub = (
          await app.request('POST', '/api/subscriptions', {
            body: { customer_id: customer.id, plan_id: plans[plan0], quantity: quantity0 },
          })
        ).body;
        const first = (await app.request('GET', `/api/invoices?subscription_id=${sub.id}`)).body.data[0];
        assert.equal(
          (await app.request('POST', `/api/invoices/${first.id}/pay`, { body: { paid_out_of_band: true } })).status,
          200,
        );
        const model = new Model(
          plan0,
          quantity0,
          Date.parse(sub.current_period_start),
          Date.parse(sub.current_period_end),
        );
        let now = Date.parse(T0);

        for (const step of ops) {
          if (step.kind === 'advance') {
            now += step.hours * HOUR;
            const res = await app.request('POST', `/api/test-clocks/${clock.id}/advance`, {
              body: { frozen_time: new Date(now).toISOString() },
            });
            assert.equal(res.status, 202, res.text);
            await worker.runOnce();
            model.advanceTo(now);
            continue;
          }
          // A change to what it is already is refused (400: DELETE …/pending-update undoes a scheduled one).
          const same = (other: { plan: number; quantity: number } | null) =>
            other !== null && other.plan === step.plan && other.quantity === step.quantity;
          if (same(model) || (step.how === 'period_end' && same(model.pending))) continue;
          const body =
            step.how === 'period_end'
              ? { plan_id: plans[step.plan], quantity: step.quantity, effective: 'period_end' }
              : {
                  plan_id: plans[step.plan],
                  quantity: step.quantity,
                  proration_behavior: step.how,
                  effective: 'immediately',
                };
          const upcomingBefore = await upcomingProrations(app, sub.id);
          const preview = await app.request('POST', '/api/invoices/preview', {
            body: { subscription_id: sub.id, ...body },
          });
          assert.equal(preview.status, 200, preview.text);
          const invoicesBefore = (await customerInvoices(app, customer.id)).length;
          const changed = await app.request('PATCH', `/api/subscriptions/${sub.id}`, {
            body: step.how === 'period_end' ? body : { ...body, proration_date: preview.body.proration_date },
          });
          assert.equal(changed.status, 200, changed.text);
          const invoices = await customerInvoices(app, customer.id);
          if (step.how === 'always_invoice') {
            // The preview is the invoice issued now, to the minor unit.
            assert.equal(invoices.length, invoicesBefore + 1);
            assert.deepEqual(linesOf(invoices.at(-1)!.lines), linesOf(preview.body.lines));
          } else {
            assert.equal(invoices.length, invoicesBefore);
            // The preview is the renewal to come, with the items now waiting.
            assert.deepEqual(await upcoming(app, sub.id), linesOf(preview.body.lines));
            if (step.how === 'create_prorations')
              assert.equal((await upcomingProrations(app, sub.id)).length, upcomingBefore.length + 2);
          }
          if (step.how === 'period_end') model.pending = { plan: step.plan, quantity: step.quantity };
          else model.changeNow(Date.parse(preview.body.proration_date), step.plan, step.quantity);
        }

        const invoices = await customerInvoices(app, customer.id);
        const waiting = await upcomingProrations(app, sub.id);
        const invoiced =
          invoices.reduce((sum, invoice) => sum + invoice.total, 0) +
          waiting.reduce((sum, line) => sum + line.amount, 0);
        const lines = invoices.reduce((count, invoice) => count + invoice.lines.length, 0) + waiting.length;
        const expected = model.total();
        assert.ok(
          Math.abs(invoiced - expected) <= lines,
          `invoiced ${invoiced}, ∫ price × quantity = ${expected}, ${lines} lines`,
        );
        // One invoice per period, back to back, the last one the subscription's current period.
        // A change's always_invoice invoice is the subscription's too, but bills no period: no subscription line.
        const periods = invoices.filter(
          (invoice) => invoice.subscription_id === sub.id && invoice.lines.some((line) => line.kind === 'subscription'),
        );
        for (let i = 1; i < periods.length; i++) assert.equal(periods[i]!.period_start, periods[i - 1]!.period_end);
        const after = (await app.request('GET', `/api/subscriptions/${sub.id}`)).body;
        assert.equal(after.status, 'active');
        assert.equal(periods.at(-1)!.period_end, after.current_period_end);
        assert.equal(Date.parse(after.current_period_end), model.end);
        // The clock's delete takes the subscription with its waiting items.
        assert.equal((await app.request('DELETE', `/api/test-clocks/${clock.id}`)).status, 204);
        assert.equal((await app.request('GET', `/api/subscriptions/${sub.id}`)).status, 404);
      },
    ),
    {
      numRuns: 15,
      // Seats added with create_prorations, then the renewal that takes them: always tried.
      examples: [
        [
          0,
          2,
          [
            { kind: 'change', plan: 0, quantity: 5, how: 'create_prorations' },
            { kind: 'advance', hours: 800 },
          ],
        ],
      ],
    },
  );
});

interface ListedInvoice {
  subscription_id: string | null;
  period_start: string;
  period_end: string;
  total: number;
  lines: Line[];
}

async function customerInvoices(app: TestApp, customerId: string): Promise<ListedInvoice[]> {
  const res = await app.request(
    'GET',
    `/api/invoices?customer_id=${customerId}&sort_by=created_at&sort_order=asc&limit=100`,
  );
  return res.body.data;
}

const linesOf = (lines: Line[]) => lines.map((line) => [line.kind, line.amount, line.description]);

async function upcoming(app: TestApp, subscriptionId: string) {
  const res = await app.request('POST', '/api/invoices/preview', { body: { subscription_id: subscriptionId } });
  assert.equal(res.status, 200, res.text);
  return linesOf(res.body.lines);
}

async function upcomingProrations(app: TestApp, subscriptionId: string): Promise<Line[]> {
  const res = await app.request('POST', '/api/invoices/preview', { body: { subscription_id: subscriptionId } });
  return (res.body.lines as Line[]).filter((line) => line.kind === 'proration');
}
