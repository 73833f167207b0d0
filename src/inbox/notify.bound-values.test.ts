// Parameters are bound, never written into SQL text (SPEC §5 "Store, then process"; the
// house rule for every statement): on PostgreSQL every statement text the app's pool writes
// to the server is captured on the wire (db/pg-traffic.ts watchStatements) while the money
// path runs — random histories of Paystack and Stripe reports (payments, failures, refunds,
// redeliveries, linked Stripe references) through POST /api/notify, payers known and new,
// saved cards, metadata naming our customers, then the worker's fan-out — and no value of
// the payloads (references, emails, ids, metadata strings, amounts) may appear in any text.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import { ON_POSTGRES } from '../../test/helpers/database.ts';
import { createCustomer, createPlan } from '../../test/helpers/factories.ts';
import { money, type Report, reportsOf } from '../../test/helpers/money-model.ts';
import { paystackCharge, PROVIDER_ENV, postPaystack, postStripe } from '../../test/helpers/provider-events.ts';
import { fanOutEvents } from '../modules/webhooks/webhooks.fan-out.ts';

/**
 * The values of `body` that would give a value away if written into SQL: strings of six
 * characters or more with a digit or `@` in them (references, ids, emails, codes, metadata;
 * not the providers' type names such as `invoice_payment`, which our tables share) and whole
 * numbers of four digits or more (amounts, provider ids).
 */
function distinctiveValues(body: unknown, into: Set<string>): Set<string> {
  if (typeof body === 'string') {
    if (body.length >= 6 && /[\d@]/.test(body)) into.add(body);
  } else if (typeof body === 'number') {
    if (Number.isInteger(body) && Math.abs(body) >= 1000) into.add(String(body));
  } else if (Array.isArray(body)) {
    for (const item of body) distinctiveValues(item, into);
  } else if (body !== null && typeof body === 'object') {
    for (const value of Object.values(body)) distinctiveValues(value, into);
  }
  return into;
}

/** `value` appears in `text` as itself (a number not inside a longer number). */
function appearsIn(text: string, value: string): boolean {
  if (!/^\d+$/.test(value)) return text.includes(value);
  return new RegExp(`(?<![\\d.])${value}(?![\\d.])`).test(text);
}

async function post(app: TestApp, report: Report) {
  return report.provider === 'paystack' ? postPaystack(app, report.body) : postStripe(app, report.body);
}

test(
  'PostgreSQL: no value of a provider event reaches the server inside SQL text, on the notify path or the fan-out',
  { skip: ON_POSTGRES ? false : 'PostgreSQL only: SQLite statements never leave the process' },
  async (t) => {
    const app = await buildTestApp(t, { env: PROVIDER_ENV });
    const sent: string[] = [];
    t.after(app.deps.database.watchStatements((text) => sent.push(text)));
    const plans = {
      paystack: (await createPlan(app, { currency: 'NGN', amount: 500000 })).id as string,
      stripe: (await createPlan(app, { currency: 'USD', amount: 2000 })).id as string,
    };
    const bodies: unknown[] = [];
    const histories = fc.sample(money(app.clock.now()), { numRuns: 4, seed: 20260115 });
    for (const history of histories) {
      const subs = [];
      for (const provider of history.subscriptions) {
        const customer = await createCustomer(app);
        const res = await app.request('POST', '/api/subscriptions', {
          body: { customer_id: customer.id, plan_id: plans[provider], trial_period_days: 14 },
        });
        assert.equal(res.status, 201, res.text);
        subs.push({
          id: res.body.id,
          customerId: customer.id,
          provider,
          currency: provider === 'paystack' ? 'NGN' : 'USD',
        });
      }
      const { reports } = reportsOf(history, subs);
      // Some at once, so batches of several events are processed together too.
      for (let at = 0; at < reports.length; at += 3) {
        const group = reports.slice(at, at + 3);
        const answers = await Promise.all(group.map((report) => post(app, report)));
        answers.forEach((answer, i) => assert.equal(answer.status, 200, `${group[i]!.label}: ${answer.text}`));
        bodies.push(...group.map((report) => report.body));
      }
    }
    // New payers and a returning one, with a saved card, metadata of ours and a free text.
    const named = await createCustomer(app, { email: 'named.customer.7731@example.com' });
    const charges = [
      paystackCharge({ email: 'new.payer.4417@example.com', amount: 4_812_377 }),
      paystackCharge({ email: 'new.payer.4417@example.com', amount: 3_190_443 }),
      paystackCharge({ amount: 2_750_001, metadata: { customer_id: named.id, note: 'free_text_9921' } }),
    ];
    for (const charge of charges) {
      const answer = await postPaystack(app, charge);
      assert.equal(answer.status, 200, answer.text);
      bodies.push(charge);
    }
    while ((await fanOutEvents(app.deps.db, app.clock, 1000)) > 0);

    const values = new Set<string>();
    for (const body of bodies) distinctiveValues(body, values);
    assert.ok(values.size > 50, `the payloads gave ${values.size} values to look for`);
    assert.ok(
      sent.some((text) => text.startsWith('insert into "provider_events"')),
      'the inbox inserts were seen on the wire',
    );
    assert.ok(sent.length > 20, `${sent.length} statement texts captured`);
    const found = [...values].flatMap((value) =>
      sent.filter((text) => appearsIn(text, value)).map((text) => `${value} in: ${text.slice(0, 200)}`),
    );
    assert.deepEqual(found, []);
  },
);
