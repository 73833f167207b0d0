// A claimed batch renewed set-based (renewSubscriptions) writes what renewing its rows one by
// one (renewSubscription) writes: the same invoices (lines, totals, numbers, times), the same
// subscriptions after, the same events per subscription — over a set of varied renewals, the
// plain ones (a saved card or none, a trial's end, discounts, taxes, tax-exempt) taken by the
// batch path in a few statements, the others (credit, a scheduled plan change, a customer met
// twice) by the per-row code inside it. Both runs are rolled back, so they start from the same
// database. On both databases.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KyselyPlugin, Transaction } from 'kysely';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import { createCustomer, createPlan } from '../../test/helpers/factories.ts';
import { saveTestPaymentMethod } from '../../test/helpers/payment-methods.ts';
import type { Database } from '../db/database.ts';
import { deferCounts, flushCounts } from '../db/counts.ts';
import { deferEvents, flushEvents } from '../modules/events/events.service.ts';
import { REAL_TIME } from '../db/scope.ts';
import { periodEndDueQuery } from '../worker/subscriptions.jobs.ts';
import { renewSubscription, renewSubscriptions } from './renewals.ts';

const DAY = 86_400_000;

/** Counts the INSERTs into `invoices` a transaction runs through it. */
function invoiceInserts(): KyselyPlugin & { count: number } {
  const plugin = {
    count: 0,
    transformQuery: ({ node }: { node: { kind: string; into?: { table: { identifier: { name: string } } } } }) => {
      if (node.kind === 'InsertQueryNode' && node.into?.table.identifier.name === 'invoices') plugin.count += 1;
      return node;
    },
    transformResult: async ({ result }: { result: unknown }) => result,
  };
  return plugin as unknown as KyselyPlugin & { count: number };
}

async function subscribe(app: TestApp, body: Record<string, unknown>): Promise<string> {
  const res = await app.request('POST', '/api/subscriptions', { body });
  assert.equal(res.status, 201, res.text);
  if (res.body.status === 'incomplete') {
    const open = await app.request('GET', `/api/invoices?subscription_id=${res.body.id}&status=open`);
    for (const invoice of open.body.data as { id: string }[]) {
      const paid = await app.request('POST', `/api/invoices/${invoice.id}/pay`, { body: { paid_out_of_band: true } });
      assert.equal(paid.status, 200, paid.text);
    }
  }
  return res.body.id;
}

class Rollback extends Error {
  readonly captured: unknown;
  constructor(captured: unknown) {
    super('rollback');
    this.captured = captured;
  }
}

/** What a renewal run wrote, without the random parts (ids, tokens), per subscription. */
interface Written {
  invoices: Record<string, unknown>;
  subscriptions: Record<string, unknown>;
  events: Record<string, unknown[]>;
  inserts: number;
}

/** `value` with the ids each run draws afresh (invoices, lines, events, balance transactions) and hosted tokens masked. */
function normalize(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(normalize);
  if (typeof value === 'string' && /^(inv|il|evt|cbtxn)_[0-9A-Z]{26}$/.test(value)) return '<new id>';
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([key]) => key !== 'hosted_token' && key !== 'hosted_invoice_url')
        .map(([key, v]) => [key, normalize(v)]),
    );
  }
  return value;
}

/** Renews `ids` (claim order) in a transaction by `renew`, reads what it wrote, rolls back. */
async function renewAndRollBack(
  app: TestApp,
  renew: (trx: Transaction<Database>, rows: Awaited<ReturnType<typeof claim>>) => Promise<unknown>,
): Promise<Written> {
  try {
    await app.deps.db.transaction().execute(async (outer) => {
      const counter = invoiceInserts();
      const trx = outer.withPlugin(counter) as Transaction<Database>;
      const rows = await claim(trx, app);
      const ids = rows.map((row) => row.id);
      const since = (await trx.selectFrom('events').select('id').execute()).map((row) => row.id);
      deferEvents(trx);
      deferCounts(trx);
      await renew(trx, rows);
      await flushEvents(trx);
      await flushCounts(trx);
      const inserts = counter.count;
      const invoices = await trx
        .selectFrom('invoices')
        .selectAll()
        .where('subscription_id', 'in', ids)
        .where('period_start', '>=', rows[0]!.current_period_end!)
        .execute();
      const subscriptions = await trx.selectFrom('subscriptions').selectAll().where('id', 'in', ids).execute();
      const events = await trx
        .selectFrom('events')
        .select(['id', 'topic', 'data', 'created_at', 'customer_id'])
        .where('id', 'not in', since.length > 0 ? since : ['none'])
        .orderBy('id')
        .execute();
      const bySubscription: Record<string, unknown[]> = {};
      for (const event of events) {
        const data = JSON.parse(event.data) as { id: string; subscription_id?: string; customer_id?: string };
        const key = event.topic.startsWith('subscription.') ? data.id : (data.subscription_id ?? data.customer_id!);
        (bySubscription[key] ??= []).push(normalize({ ...event, id: undefined, data }));
      }
      throw new Rollback({
        invoices: Object.fromEntries(
          invoices.map((row) => [row.subscription_id, normalize({ ...row, lines: JSON.parse(row.lines) })]),
        ),
        subscriptions: Object.fromEntries(subscriptions.map((row) => [row.id, row])),
        events: bySubscription,
        inserts,
      });
    });
  } catch (error) {
    if (error instanceof Rollback) return error.captured as Written;
    throw error;
  }
  throw new Error('not rolled back');
}

function claim(trx: Transaction<Database>, app: TestApp) {
  return periodEndDueQuery(trx, REAL_TIME, app.clock.now().toISOString(), false).limit(50).execute();
}

test('a batch renewed set-based writes the invoices, subscriptions and events renewing row by row writes', async (t) => {
  const app = await buildTestApp(t);
  const rate = async (percentage: number, inclusive = false) =>
    (await app.request('POST', '/api/tax-rates', { body: { display_name: 'VAT', percentage, inclusive } })).body.id;
  const coupon = async (body: Record<string, unknown>) =>
    (await app.request('POST', '/api/coupons', { body: { name: 'Promo', ...body } })).body.id;
  const vat = await rate(7.5);
  const included = await rate(16, true);
  const plan = (await createPlan(app)).id;
  const taxedPlan = (await createPlan(app, { amount: 9999, tax_rate_ids: [vat] })).id;
  const cheaper = (await createPlan(app, { amount: 1000 })).id;
  const forever = await coupon({ duration: 'forever', percent_off: 20 });
  const repeating = await coupon({ duration: 'repeating', duration_in_months: 3, amount_off: 700, currency: 'NGN' });
  const customer = async ({ coupon, ...body }: Record<string, unknown> = {}, card = true) => {
    const id = (await createCustomer(app, body)).id as string;
    if (coupon !== undefined) {
      const patched = await app.request('PATCH', `/api/customers/${id}`, { body: { coupon } });
      assert.equal(patched.status, 200, patched.text);
    }
    if (card) await saveTestPaymentMethod(app, id, 'paystack');
    return id;
  };

  const plain = [
    await subscribe(app, { customer_id: await customer(), plan_id: plan }),
    await subscribe(app, { customer_id: await customer({}, false), plan_id: plan }),
    await subscribe(app, { customer_id: await customer(), plan_id: plan, trial_period_days: 30 }),
    await subscribe(app, { customer_id: await customer({ coupon: forever }), plan_id: plan }),
    await subscribe(app, { customer_id: await customer(), plan_id: taxedPlan, coupon: repeating }),
    await subscribe(app, { customer_id: await customer({ tax_rate_ids: [included] }), plan_id: plan }),
    await subscribe(app, { customer_id: await customer({ tax_exempt: 'exempt' }), plan_id: taxedPlan }),
  ];
  // The rare ones: credit to spend, a change scheduled for the period end, a customer met twice.
  const credited = await customer();
  const withCredit = await subscribe(app, { customer_id: credited, plan_id: plan });
  const credit = await app.request('POST', `/api/customers/${credited}/balance-transactions`, {
    body: { amount: 1500, currency: 'NGN', description: 'goodwill' },
  });
  assert.equal(credit.status, 201, credit.text);
  const changing = await subscribe(app, { customer_id: await customer(), plan_id: plan });
  const change = await app.request('PATCH', `/api/subscriptions/${changing}`, { body: { plan_id: cheaper } });
  assert.equal(change.status, 200, change.text);
  assert.ok(change.body.pending_update, 'the downgrade waits for the period end');
  const twice = await customer();
  const first = await subscribe(app, { customer_id: twice, plan_id: plan });
  const second = await subscribe(app, { customer_id: twice, plan_id: taxedPlan });
  plain.push(first);

  app.clock.advance(31 * DAY);
  const rowByRow = await renewAndRollBack(app, async (trx, rows) => {
    for (const row of rows) await renewSubscription(trx, app.deps, row);
  });
  const batched = await renewAndRollBack(app, (trx, rows) => renewSubscriptions(trx, app.deps, rows));

  const all = [...plain, withCredit, changing, second];
  assert.deepEqual(Object.keys(rowByRow.invoices).sort(), [...all].sort(), 'every subscription renewed');
  assert.deepEqual(batched.invoices, rowByRow.invoices);
  assert.deepEqual(batched.subscriptions, rowByRow.subscriptions);
  assert.deepEqual(batched.events, rowByRow.events);
  // The cases differ where they should: discounts, taxes, credit and the change are on the invoices.
  const invoice = (id: string) => rowByRow.invoices[id] as { total_discount: number; total_tax: number };
  assert.ok(invoice(plain[3]!).total_discount > 0 && invoice(plain[4]!).total_tax > 0);
  assert.equal((rowByRow.invoices[withCredit] as { applied_balance: number }).applied_balance, 1500);
  // Row by row: one insert per invoice; set-based: the plain ones in one insert per run of
  // them in claim order, the three others each on their own.
  assert.equal(rowByRow.inserts, all.length);
  assert.ok(batched.inserts <= 3 + 4, `${batched.inserts} invoice inserts`);
});
