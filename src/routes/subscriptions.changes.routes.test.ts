// Plan changes, quantities and proration over HTTP (SPEC §13), on both databases: PATCH
// /api/subscriptions/{id}, its preview (POST /api/invoices/preview: the same lines), the
// scheduled change and its cancel, the renewal applying it, and every refusal.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import { ON_POSTGRES } from '../../test/helpers/database.ts';
import { createCustomer, createPlan } from '../../test/helpers/factories.ts';
import { invoicesOf, runWorker } from '../../test/helpers/invoice-payments.ts';
import { saveTestPaymentMethod } from '../../test/helpers/payment-methods.ts';
import { applySuccessfulPayment } from '../billing/subscription-payments.ts';
import { CANNOT_CHANGE } from '../billing/plan-change-rules.ts';
import { issueRenewalInvoices } from '../worker/subscriptions.jobs.ts';

// The test app's clock starts at 2026-01-15T10:00:00Z: monthly periods of 31 days (Jan 15 – Feb 15).
const START = '2026-01-15T10:00:00.000Z';
const END = '2026-02-15T10:00:00.000Z';
const MID = '2026-01-31T10:00:00.000Z'; // 15 of 31 days left

const usd = (app: TestApp, name: string, amount: number, more: Record<string, unknown> = {}) =>
  createPlan(app, { name, amount, currency: 'USD', ...more });

/** An active subscription (its first invoice paid) of a new customer on `planId` × `quantity`. */
async function activeSubscription(app: TestApp, planId: string, quantity = 1) {
  const customer = await createCustomer(app);
  const res = await app.request('POST', '/api/subscriptions', {
    body: { customer_id: customer.id, plan_id: planId, quantity },
  });
  assert.equal(res.status, 201, res.text);
  await app.deps.db.transaction().execute((trx) => applySuccessfulPayment(trx, app.deps, res.body.id));
  return (await app.request('GET', `/api/subscriptions/${res.body.id}`)).body;
}

/** Invoices of the customer, oldest first. */
async function customerInvoices(app: TestApp, customerId: string) {
  const res = await app.request(
    'GET',
    `/api/invoices?customer_id=${customerId}&sort_by=created_at&sort_order=asc&limit=100`,
  );
  assert.equal(res.status, 200, res.text);
  return res.body.data as {
    id: string;
    subscription_id: string | null;
    lines: { kind: string; amount: number; description: string }[];
    [key: string]: unknown;
  }[];
}

const linesOf = (invoice: { lines: { kind: string; amount: number; description: string }[] }) =>
  invoice.lines.map((line) => [line.kind, line.amount, line.description]);

async function eventsOf(app: TestApp, topic: string) {
  return (await app.request('GET', `/api/events?topic=${topic}&limit=100`)).body.data as {
    data: Record<string, unknown>;
  }[];
}

test('quantity: on create (default 1), billed as price × quantity; out of range or beyond 2^53 − 1 is 400 and creates nothing', async (t) => {
  const app = await buildTestApp(t);
  const seat = await usd(app, 'Seat', 1000);
  const sub = await activeSubscription(app, seat.id, 3);
  assert.equal(sub.quantity, 3);
  const [first] = await invoicesOf(app, sub.id);
  assert.deepEqual(linesOf(first!), [['subscription', 3000, 'Seat × 3, 15 Jan 2026 – 15 Feb 2026']]);
  const customer = await createCustomer(app);
  const huge = await usd(app, 'Huge', 1_000_000_000_000);
  const before = (await app.request('GET', '/api/subscriptions')).body.meta.total;
  for (const [planId, quantity] of [
    [seat.id, 0],
    [seat.id, 1_000_001],
    [seat.id, 1.5],
    [huge.id, 1_000_000],
  ] as const) {
    const res = await app.request('POST', '/api/subscriptions', {
      body: { customer_id: customer.id, plan_id: planId, quantity },
    });
    assert.equal(res.status, 400, res.text);
    assert.equal(res.body.code, 'validation_error');
  }
  assert.equal((await app.request('GET', '/api/subscriptions')).body.meta.total, before);
});

test('an upgrade at mid-period: the preview shows −unused +remaining, the change issues exactly that invoice now and charges the saved card', async (t) => {
  const app = await buildTestApp(t);
  const basic = await usd(app, 'Basic', 1000);
  const pro = await usd(app, 'Pro', 2000);
  const sub = await activeSubscription(app, basic.id);
  await saveTestPaymentMethod(app, sub.customer_id, 'paystack');
  app.clock.set(new Date('2026-01-31T10:00:00.600Z'));

  const preview = await app.request('POST', '/api/invoices/preview', {
    body: { subscription_id: sub.id, plan_id: pro.id },
  });
  assert.equal(preview.status, 200, preview.text);
  assert.equal(preview.body.proration_date, MID, 'now, to the second');
  // 15 of 31 days left: 1000 × 15/31 = 483.87 → 484; 2000 × 15/31 = 967.74 → 968.
  assert.deepEqual(linesOf(preview.body), [
    ['proration', -484, 'Unused time on Basic × 1 after 31 Jan 2026'],
    ['proration', 968, 'Remaining time on Pro × 1 after 31 Jan 2026'],
  ]);
  assert.equal(preview.body.total, 484);
  assert.equal(preview.body.id, undefined);
  assert.equal((await customerInvoices(app, sub.customer_id)).length, 1, 'a preview stores nothing');

  app.clock.set(new Date('2026-01-31T10:00:05.000Z'));
  const changed = await app.request('PATCH', `/api/subscriptions/${sub.id}`, {
    body: { plan_id: pro.id, proration_date: preview.body.proration_date },
  });
  assert.equal(changed.status, 200, changed.text);
  assert.deepEqual([changed.body.plan_id, changed.body.quantity, changed.body.pending_update], [pro.id, 1, null]);
  assert.deepEqual([changed.body.current_period_start, changed.body.current_period_end], [START, END]);
  const invoices = await customerInvoices(app, sub.customer_id);
  assert.equal(invoices.length, 2);
  const invoice = invoices[1]!;
  assert.deepEqual(linesOf(invoice), linesOf(preview.body));
  assert.deepEqual(
    [
      invoice.subscription_id,
      invoice.status,
      invoice.total,
      invoice.amount_due,
      invoice.due_at,
      invoice.next_payment_attempt_at,
      invoice.metadata,
    ],
    [sub.id, 'open', 484, 484, '2026-01-31T10:00:05.000Z', '2026-01-31T10:00:05.000Z', {}],
  );
  const [updated] = await eventsOf(app, 'subscription.updated');
  assert.deepEqual(updated!.data.previous_attributes, { plan_id: basic.id, quantity: 1, pending_update: null });
  assert.equal(updated!.data.plan_id, pro.id);
  // The renewal bills the new plan, with no proration left over.
  app.clock.set(new Date(END));
  await issueRenewalInvoices.run(app.deps);
  const renewal = (await invoicesOf(app, sub.id)).at(-1)!;
  assert.deepEqual(linesOf(renewal), [['subscription', 2000, 'Pro × 1, 15 Feb 2026 – 15 Mar 2026']]);
});

test('seats 3 → 5 with create_prorations: nothing invoiced now; the renewal takes the lines as a draft, as the preview said', async (t) => {
  const app = await buildTestApp(t);
  const seat = await usd(app, 'Seat', 1000);
  const sub = await activeSubscription(app, seat.id, 3);
  app.clock.set(new Date(MID));
  const body = { quantity: 5, proration_behavior: 'create_prorations' };
  const preview = await app.request('POST', '/api/invoices/preview', { body: { subscription_id: sub.id, ...body } });
  assert.equal(preview.status, 200, preview.text);
  const changed = await app.request('PATCH', `/api/subscriptions/${sub.id}`, { body });
  assert.equal(changed.status, 200, changed.text);
  assert.equal(changed.body.quantity, 5);
  assert.equal((await customerInvoices(app, sub.customer_id)).length, 1, 'the lines wait');
  // The upcoming invoice shows them too.
  const upcoming = await app.request('POST', '/api/invoices/preview', { body: { subscription_id: sub.id } });
  assert.deepEqual(linesOf(upcoming.body), linesOf(preview.body));
  app.clock.set(new Date(END));
  await issueRenewalInvoices.run(app.deps);
  const renewal = (await invoicesOf(app, sub.id)).at(-1)!;
  // 3000 × 15/31 = 1451.61 → 1452; 5000 × 15/31 = 2419.35 → 2419.
  assert.deepEqual(linesOf(renewal), [
    ['subscription', 5000, 'Seat × 5, 15 Feb 2026 – 15 Mar 2026'],
    ['proration', -1452, 'Unused time on Seat × 3 after 31 Jan 2026'],
    ['proration', 2419, 'Remaining time on Seat × 5 after 31 Jan 2026'],
  ]);
  assert.deepEqual(linesOf(renewal), linesOf(preview.body));
  assert.equal(renewal.status, 'draft');
  // Taken once: the next renewal has no proration.
  const next = await app.request('POST', '/api/invoices/preview', { body: { subscription_id: sub.id } });
  assert.deepEqual(linesOf(next.body), [['subscription', 5000, 'Seat × 5, 15 Mar 2026 – 15 Apr 2026']]);
});

test('a pause voids the renewal draft that took proration items: they wait for the next invoice again', async (t) => {
  const app = await buildTestApp(t);
  const seat = await usd(app, 'Seat', 1000);
  const sub = await activeSubscription(app, seat.id, 3);
  app.clock.set(new Date(MID));
  const changed = await app.request('PATCH', `/api/subscriptions/${sub.id}`, {
    body: { quantity: 5, proration_behavior: 'create_prorations' },
  });
  assert.equal(changed.status, 200, changed.text);
  app.clock.set(new Date(END));
  await issueRenewalInvoices.run(app.deps);
  const draft = (await invoicesOf(app, sub.id)).at(-1)!;
  assert.equal(draft.status, 'draft');
  assert.equal((await upcomingLines(app, sub.id)).filter(([kind]) => kind === 'proration').length, 0, 'taken');
  assert.equal((await app.request('PUT', `/api/subscriptions/${sub.id}/pause`)).status, 200);
  assert.equal((await app.request('GET', `/api/invoices/${draft.id}`)).body.status, 'void');
  assert.deepEqual(
    (await upcomingLines(app, sub.id)).filter(([kind]) => kind === 'proration'),
    [
      ['proration', -1452, 'Unused time on Seat × 3 after 31 Jan 2026'],
      ['proration', 2419, 'Remaining time on Seat × 5 after 31 Jan 2026'],
    ],
  );
});

async function upcomingLines(app: TestApp, subscriptionId: string) {
  const res = await app.request('POST', '/api/invoices/preview', { body: { subscription_id: subscriptionId } });
  assert.equal(res.status, 200, res.text);
  return linesOf(res.body);
}

test('a downgrade is scheduled for the period end (no proration), can be cancelled, and is applied once by the renewal', async (t) => {
  const app = await buildTestApp(t);
  const basic = await usd(app, 'Basic', 1000);
  const pro = await usd(app, 'Pro', 2000);
  const sub = await activeSubscription(app, pro.id);
  app.clock.set(new Date(MID));
  const scheduled = await app.request('PATCH', `/api/subscriptions/${sub.id}`, { body: { plan_id: basic.id } });
  assert.equal(scheduled.status, 200, scheduled.text);
  assert.equal(scheduled.body.plan_id, pro.id);
  assert.deepEqual(scheduled.body.pending_update, { plan_id: basic.id, quantity: 1, effective_at: END });
  assert.equal((await eventsOf(app, 'subscription.update_scheduled')).length, 1);
  const upcoming = await app.request('POST', '/api/invoices/preview', { body: { subscription_id: sub.id } });
  assert.deepEqual(linesOf(upcoming.body), [['subscription', 1000, 'Basic × 1, 15 Feb 2026 – 15 Mar 2026']]);

  const cancelled = await app.request('DELETE', `/api/subscriptions/${sub.id}/pending-update`);
  assert.equal(cancelled.status, 200, cancelled.text);
  assert.equal(cancelled.body.pending_update, null);
  const again = await app.request('DELETE', `/api/subscriptions/${sub.id}/pending-update`);
  assert.equal(again.status, 409);

  assert.equal(
    (
      await app.request('PATCH', `/api/subscriptions/${sub.id}`, {
        body: { plan_id: basic.id, quantity: 2, effective: 'period_end' },
      })
    ).status,
    200,
  );
  app.clock.set(new Date(END));
  assert.equal(await issueRenewalInvoices.run(app.deps), 1);
  assert.equal(await issueRenewalInvoices.run(app.deps), 0);
  const after = (await app.request('GET', `/api/subscriptions/${sub.id}`)).body;
  assert.deepEqual([after.plan_id, after.quantity, after.pending_update], [basic.id, 2, null]);
  const applied = await eventsOf(app, 'subscription.update_applied');
  assert.equal(applied.length, 1);
  assert.deepEqual((applied[0]!.data.previous_attributes as Record<string, unknown>).plan_id, pro.id);
  const invoices = await customerInvoices(app, sub.customer_id);
  assert.equal(invoices.length, 2, 'no proration invoice');
  assert.deepEqual(linesOf(invoices[1]!), [['subscription', 2000, 'Basic × 2, 15 Feb 2026 – 15 Mar 2026']]);
});

test('month → year resets the anchor and the period now and credits the rest; year → month turns a negative total into credit', async (t) => {
  const app = await buildTestApp(t);
  const monthly = await usd(app, 'Monthly', 1000);
  const yearly = await usd(app, 'Yearly', 10000, { interval: 'year' });
  const sub = await activeSubscription(app, monthly.id);
  app.clock.set(new Date(MID));
  const preview = await app.request('POST', '/api/invoices/preview', {
    body: { subscription_id: sub.id, plan_id: yearly.id },
  });
  const changed = await app.request('PATCH', `/api/subscriptions/${sub.id}`, { body: { plan_id: yearly.id } });
  assert.equal(changed.status, 200, changed.text);
  assert.deepEqual(
    [changed.body.billing_cycle_anchor, changed.body.current_period_start, changed.body.current_period_end],
    [MID, MID, '2027-01-31T10:00:00.000Z'],
  );
  const invoice = (await invoicesOf(app, sub.id)).at(-1)!;
  assert.deepEqual(linesOf(invoice), [
    ['subscription', 10000, 'Yearly × 1, 31 Jan 2026 – 31 Jan 2027'],
    ['proration', -484, 'Unused time on Monthly × 1 after 31 Jan 2026'],
  ]);
  assert.deepEqual(linesOf(preview.body), linesOf(invoice));
  assert.deepEqual([invoice.status, invoice.amount_due, invoice.period_start], ['open', 9516, MID]);
  await app.deps.db.transaction().execute((trx) => applySuccessfulPayment(trx, app.deps, sub.id));

  // Three months later, back to monthly: most of the year is credited against one month.
  app.clock.set(new Date('2026-05-02T10:00:00.000Z'));
  const back = await app.request('PATCH', `/api/subscriptions/${sub.id}`, { body: { plan_id: monthly.id } });
  assert.equal(back.status, 200, back.text);
  const credit = (await invoicesOf(app, sub.id)).at(-1)!;
  // 274 of 365 days left: 10000 × 274/365 = 7506.85 → 7507.
  assert.deepEqual(linesOf(credit), [
    ['subscription', 1000, 'Monthly × 1, 2 May 2026 – 2 Jun 2026'],
    ['proration', -7507, 'Unused time on Yearly × 1 after 2 May 2026'],
  ]);
  assert.deepEqual([credit.total, credit.amount_due, credit.status], [-6507, 0, 'paid']);
  const customer = await app.request('GET', `/api/customers/${sub.customer_id}`);
  assert.deepEqual(customer.body.balances, { USD: 6507 });
});

test('in a trial the plan is swapped with no invoice and the trial goes on; the trial end bills the new plan', async (t) => {
  const app = await buildTestApp(t);
  const basic = await usd(app, 'Basic', 1000);
  const pro = await usd(app, 'Pro', 2000);
  const customer = await createCustomer(app);
  const sub = (
    await app.request('POST', '/api/subscriptions', {
      body: { customer_id: customer.id, plan_id: basic.id, trial_period_days: 14 },
    })
  ).body;
  app.clock.set(new Date('2026-01-20T10:00:00.000Z'));
  const changed = await app.request('PATCH', `/api/subscriptions/${sub.id}`, {
    body: { plan_id: pro.id, quantity: 2 },
  });
  assert.equal(changed.status, 200, changed.text);
  assert.deepEqual(
    [
      changed.body.status,
      changed.body.plan_id,
      changed.body.quantity,
      changed.body.trial_end,
      changed.body.current_period_end,
    ],
    ['trialing', pro.id, 2, sub.trial_end, sub.trial_end],
  );
  assert.equal((await customerInvoices(app, customer.id)).length, 0);
  app.clock.set(new Date(sub.trial_end));
  await issueRenewalInvoices.run(app.deps);
  const [first] = await invoicesOf(app, sub.id);
  assert.deepEqual(linesOf(first!), [['subscription', 4000, 'Pro × 2, 29 Jan 2026 – 28 Feb 2026']]);
});

test('refusals change nothing: past_due 409 with the exact text, other currency, archived plan, bad proration_date 400, unknown 404', async (t) => {
  const app = await buildTestApp(t);
  const basic = await usd(app, 'Basic', 1000);
  const pro = await usd(app, 'Pro', 2000);
  const naira = await createPlan(app, { name: 'Naira', amount: 500000, currency: 'NGN' });
  const archived = await usd(app, 'Old', 3000);
  assert.equal((await app.request('PATCH', `/api/plans/${archived.id}`, { body: { active: false } })).status, 200);
  const sub = await activeSubscription(app, basic.id);
  const updatesBefore = (await eventsOf(app, 'subscription.updated')).length;
  app.clock.set(new Date(MID));
  const refusals: [Record<string, unknown>, number, RegExp][] = [
    [{ plan_id: naira.id }, 400, /keeps the currency/],
    [{ plan_id: archived.id }, 400, /archived/],
    [{ plan_id: pro.id, proration_date: END }, 400, /inside the current period/],
    [{ plan_id: pro.id, proration_date: '2026-01-01T00:00:00Z' }, 400, /inside the current period/],
    [{ plan_id: pro.id, proration_behavior: 'sometimes' }, 400, /proration_behavior/],
    [{ plan_id: pro.id, surprise: 1 }, 400, /surprise|additional/],
    [{ quantity: 1 }, 400, /no new plan or quantity/],
    [{ plan_id: 'plan_01JD3Q7Z8X9Y0A1B2C3D4E5F6G' }, 404, /not found/],
  ];
  for (const [body, status, message] of refusals) {
    for (const path of [`/api/subscriptions/${sub.id}`, '/api/invoices/preview']) {
      const res = path.startsWith('/api/invoices')
        ? await app.request('POST', path, { body: { subscription_id: sub.id, ...body } })
        : await app.request('PATCH', path, { body });
      assert.equal(res.status, status, `${JSON.stringify(body)} on ${path}: ${res.text}`);
      assert.match(res.text, message);
    }
  }
  assert.equal((await app.request('PATCH', '/api/subscriptions/sub_nope', { body: { quantity: 2 } })).status, 404);
  await app.deps.db.updateTable('subscriptions').set({ status: 'past_due' }).where('id', '=', sub.id).execute();
  const pastDue = await app.request('PATCH', `/api/subscriptions/${sub.id}`, { body: { plan_id: pro.id } });
  assert.equal(pastDue.status, 409);
  assert.deepEqual([pastDue.body.code, pastDue.body.message], ['validation_error', CANNOT_CHANGE]);
  const after = (await app.request('GET', `/api/subscriptions/${sub.id}`)).body;
  assert.deepEqual([after.plan_id, after.quantity, after.pending_update], [basic.id, 1, null]);
  assert.equal((await eventsOf(app, 'subscription.updated')).length, updatesBefore);
  assert.equal((await customerInvoices(app, sub.customer_id)).length, 1);
});

test("concurrent changes of one subscription: each is 200 or 409, the state is one request's whole change, one invoice per winner", async (t) => {
  const app = await buildTestApp(t);
  const plans = [await usd(app, 'A', 2000), await usd(app, 'B', 3000), await usd(app, 'C', 4000)];
  const sub = await activeSubscription(app, (await usd(app, 'Start', 1000)).id);
  app.clock.set(new Date(MID));
  const bodies = plans.map((plan, i) => ({ plan_id: plan.id, quantity: i + 2 }));
  const results = await Promise.all(
    bodies.map((body) => app.request('PATCH', `/api/subscriptions/${sub.id}`, { body })),
  );
  const winners = results.filter((res) => res.status === 200);
  for (const res of results) {
    assert.ok(res.status === 200 || res.status === 409, res.text);
    if (res.status === 409) assert.equal(res.body.code, 'conflict');
  }
  assert.ok(winners.length >= 1);
  const after = (await app.request('GET', `/api/subscriptions/${sub.id}`)).body;
  assert.ok(
    bodies.some((body) => body.plan_id === after.plan_id && body.quantity === after.quantity),
    'never a mixed state',
  );
  assert.equal((await customerInvoices(app, sub.customer_id)).length, 1 + winners.length);
  if (!ON_POSTGRES) return;
  // A change that finds the subscription held (here by an open transaction) is refused at once.
  const trx = await app.deps.db.startTransaction().execute();
  try {
    await trx.selectFrom('subscriptions').select('id').where('id', '=', sub.id).forUpdate().execute();
    const held = await app.request('PATCH', `/api/subscriptions/${sub.id}`, { body: { quantity: 9 } });
    assert.equal(held.status, 409, held.text);
    assert.equal(held.body.code, 'conflict');
  } finally {
    await trx.rollback().execute();
  }
  assert.equal((await app.request('PATCH', `/api/subscriptions/${sub.id}`, { body: { quantity: 9 } })).status, 200);
});

test('a change racing the renewal at the period end: one consistent period either way', async (t) => {
  const app = await buildTestApp(t);
  const monthly = await usd(app, 'Monthly', 1000);
  const yearly = await usd(app, 'Yearly', 10000, { interval: 'year' });
  const sub = await activeSubscription(app, monthly.id);
  // Due for its renewal: the change either comes after it (in the new period) or is refused.
  app.clock.set(new Date('2026-02-15T10:00:05.000Z'));
  const [renewed, changed] = await Promise.all([
    issueRenewalInvoices.run(app.deps),
    app.request('PATCH', `/api/subscriptions/${sub.id}`, { body: { plan_id: yearly.id } }),
  ]);
  const after = (await app.request('GET', `/api/subscriptions/${sub.id}`)).body;
  const invoices = await invoicesOf(app, sub.id);
  // Whatever the order, the subscription is in the period of its last invoice, renewed once.
  const last = invoices.at(-1)!;
  assert.deepEqual([after.current_period_start, after.current_period_end], [last.period_start, last.period_end]);
  assert.equal(invoices.filter((invoice) => invoice.period_start === END).length, 1);
  assert.equal(renewed, 1, 'the renewal is never skipped for good: it ran, or the change held the row');
  if (changed.status === 200) {
    // After the renewal: the new month, 5 s in, is credited (1000 × (28 d − 5 s) / 28 d → 1000).
    assert.equal(after.plan_id, yearly.id);
    assert.deepEqual(linesOf(last), [
      ['subscription', 10000, 'Yearly × 1, 15 Feb 2026 – 15 Feb 2027'],
      ['proration', -1000, 'Unused time on Monthly × 1 after 15 Feb 2026'],
    ]);
  } else assert.deepEqual([changed.status, changed.body.code, after.plan_id], [409, 'conflict', monthly.id]);
  await runWorker(app.deps);
});
