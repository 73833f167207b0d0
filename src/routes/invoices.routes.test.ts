import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import { createCustomer, createPlan, createSubscription } from '../../test/helpers/factories.ts';
import { issueTestInvoice, markTestInvoicePaid, openTestDunningCase } from '../../test/helpers/invoices.ts';

const UNKNOWN_INVOICE = 'inv_01JD3Q7Z8X9Y0A1B2C3D4E5F6G';
/** Subscriptions in these tests are trialing: the invoices are the ones the tests issue. */
const TRIAL_DAYS = 30;
const CANNOT_VOID_BODY = { code: 'validation_error', message: 'cannot be voided in its current state', details: null };
const CANNOT_MARK_BODY = {
  code: 'validation_error',
  message: 'cannot be marked uncollectible in its current state',
  details: null,
};

/** How many events of `topic` were emitted so far. */
async function countEvents(app: TestApp, topic: string): Promise<number> {
  return (await app.request('GET', `/api/events?topic=${topic}`)).body.meta.total;
}

/**
 * An open invoice for a new subscription (its own customer and plan unless given). Trialing,
 * so the subscription flows issue no invoice of their own (SPEC §9: none until the trial ends)
 * and this test's invoices are the only ones.
 */
async function openInvoice(app: TestApp, options: Parameters<typeof createSubscription>[1] = {}) {
  const sub = await createSubscription(app, { trialPeriodDays: TRIAL_DAYS, ...options });
  return issueTestInvoice(app, sub.id);
}

async function uncollectibleInvoice(app: TestApp) {
  const invoice = await openInvoice(app);
  const res = await app.request('POST', `/api/invoices/${invoice.id}/mark-uncollectible`);
  assert.equal(res.status, 200);
  return res.body;
}

async function voidedInvoice(app: TestApp) {
  const invoice = await openInvoice(app);
  const res = await app.request('POST', `/api/invoices/${invoice.id}/void`);
  assert.equal(res.status, 200);
  return res.body;
}

test('list: newest first with meta; filters customer_id, subscription_id, status; sorts due_at and amount_due with id tie-break', async (t) => {
  const app = await buildTestApp(t);
  const empty = await app.request('GET', '/api/invoices');
  assert.equal(empty.status, 200);
  assert.deepEqual(empty.body, { data: [], meta: { total: 0, page: 0, limit: 10 } });

  const alice = await createCustomer(app);
  const bob = await createCustomer(app);
  const cheap = await createPlan(app, { amount: 1000 });
  const dear = await createPlan(app, { amount: 9000 });
  const aliceSub = await createSubscription(app, {
    customerId: alice.id,
    planId: cheap.id,
    trialPeriodDays: TRIAL_DAYS,
  });
  const bobSub = await createSubscription(app, { customerId: bob.id, planId: dear.id, trialPeriodDays: TRIAL_DAYS });
  // a1 (alice, 1000, due latest), b1 (bob, 9000), a2 (alice, 1000, next period, due earliest)
  const a1 = await issueTestInvoice(app, aliceSub.id, { dueAt: '2026-03-01T00:00:00.000Z' });
  app.clock.advance(1000);
  const b1 = await issueTestInvoice(app, bobSub.id, { dueAt: '2026-02-01T00:00:00.000Z' });
  app.clock.advance(1000);
  const a2 = await issueTestInvoice(app, aliceSub.id, {
    periodStart: '2026-02-14T10:00:00.000Z',
    dueAt: '2026-01-20T00:00:00.000Z',
  });
  await markTestInvoicePaid(app, b1.id);

  const ids = async (query: string) => {
    const res = await app.request('GET', `/api/invoices?${query}`);
    assert.equal(res.status, 200, query);
    return { ids: res.body.data.map((i: { id: string }) => i.id), total: res.body.meta.total };
  };
  assert.deepEqual(await ids(''), { ids: [a2.id, b1.id, a1.id], total: 3 });
  assert.deepEqual(await ids('sort_order=asc'), { ids: [a1.id, b1.id, a2.id], total: 3 });
  assert.deepEqual(await ids(`customer_id=${alice.id}`), { ids: [a2.id, a1.id], total: 2 });
  assert.deepEqual(await ids(`subscription_id=${bobSub.id}`), { ids: [b1.id], total: 1 });
  assert.deepEqual(await ids('status=open'), { ids: [a2.id, a1.id], total: 2 });
  assert.deepEqual(await ids('status=paid'), { ids: [b1.id], total: 1 });
  assert.deepEqual(await ids(`customer_id=${alice.id}&status=paid`), { ids: [], total: 0 });
  assert.deepEqual(await ids('status=void'), { ids: [], total: 0 });
  assert.deepEqual(await ids(`customer_id=${UNKNOWN_INVOICE}`), { ids: [], total: 0 });
  assert.deepEqual(await ids('sort_by=due_at&sort_order=asc'), { ids: [a2.id, b1.id, a1.id], total: 3 });
  assert.deepEqual(await ids('sort_by=due_at'), { ids: [a1.id, b1.id, a2.id], total: 3 });
  // a1 and a2 owe the same: the tie breaks on id, in the sort's direction.
  assert.deepEqual(await ids('sort_by=amount_due&sort_order=asc'), { ids: [a1.id, a2.id, b1.id], total: 3 });
  assert.deepEqual(await ids('sort_by=amount_due'), { ids: [b1.id, a2.id, a1.id], total: 3 });

  // Paging: zero-based pages of `limit`, the total unchanged.
  assert.deepEqual(await ids('limit=2'), { ids: [a2.id, b1.id], total: 3 });
  assert.deepEqual(await ids('limit=2&page=1'), { ids: [a1.id], total: 3 });
  assert.deepEqual(await ids('limit=2&page=2'), { ids: [], total: 3 });
  const paged = await app.request('GET', '/api/invoices?limit=1&page=1&status=open');
  assert.deepEqual(paged.body.meta, { total: 2, page: 1, limit: 1 });
  assert.deepEqual(
    paged.body.data.map((i: { id: string }) => i.id),
    [a1.id],
  );

  // Each item is the invoice as GET shows it, without its payment attempts (GET one only).
  const list = await app.request('GET', '/api/invoices?sort_order=asc');
  assert.deepEqual(
    { ...list.body.data[1], payment_attempts: [] },
    (await app.request('GET', `/api/invoices/${b1.id}`)).body,
  );
  assert.equal(list.body.data[1].status, 'paid');
  assert.equal(list.body.data[1].amount_remaining, 0);
});

test('list: lenient page and limit, 400 for an unknown sort_by, sort_order or status, as on every list', async (t) => {
  const app = await buildTestApp(t);
  await openInvoice(app);
  for (const [query, meta] of [
    ['limit=abc&page=-3', { total: 1, page: 0, limit: 10 }],
    ['limit=0&page=x', { total: 1, page: 0, limit: 10 }],
    ['limit=1000', { total: 1, page: 0, limit: 100 }],
  ] as const) {
    const res = await app.request('GET', `/api/invoices?${query}`);
    assert.equal(res.status, 200, query);
    assert.deepEqual(res.body.meta, meta, query);
  }
  for (const [query, field, message] of [
    ['status=bogus', 'status', 'status must be one of: draft, open, paid, void, uncollectible'],
    ['sort_by=number', 'sort_by', 'sort_by must be one of: created_at, due_at, amount_due'],
    ['sort_order=up', 'sort_order', 'sort_order must be one of: asc, desc'],
  ]) {
    const res = await app.request('GET', `/api/invoices?${query}`);
    assert.equal(res.status, 400, query);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    assert.deepEqual(res.body, {
      code: 'validation_error',
      message,
      details: null,
      status: 400,
      title: 'Bad Request',
      detail: message,
      errors: [{ name: field, reason: message }],
    });
    // The same words another list uses for the same mistake.
    if (field !== 'status') {
      const other = await app.request('GET', `/api/payments?${query}`);
      assert.equal(other.status, 400);
      assert.equal(other.body.errors[0].name, field);
    }
  }
  const nul = await app.request('GET', '/api/invoices?customer_id=%00');
  assert.equal(nul.status, 400);
  assert.equal(nul.body.code, 'validation_error');
});

test('get returns the invoice; unknown, malformed and other-kind ids are 404 on get, void and mark-uncollectible', async (t) => {
  const app = await buildTestApp(t);
  const invoice = await openInvoice(app, { plan: { name: 'Pro', amount: 5000, currency: 'NGN' } });
  const got = await app.request('GET', `/api/invoices/${invoice.id}`);
  assert.equal(got.status, 200);
  assert.deepEqual(got.body, { ...invoice, payment_attempts: [] });
  assert.equal(got.body.status, 'open');
  assert.equal(got.body.amount_due, 5000);
  assert.equal(got.body.amount_remaining, 5000);
  assert.deepEqual(
    [got.body.subtotal, got.body.total_discount, got.body.total_tax, got.body.total, got.body.applied_balance],
    [5000, 0, 0, 5000, 0],
  );
  assert.deepEqual(
    got.body.lines.map((line: Record<string, unknown>) => [line.kind, line.amount, line.unit_amount, line.proration]),
    [['subscription', 5000, 5000, false]],
  );
  for (const id of [UNKNOWN_INVOICE, 'nope', 'cus_01JD3Q7Z8X9Y0A1B2C3D4E5F6G', invoice.id.toLowerCase()]) {
    const res = await app.request('GET', `/api/invoices/${id}`);
    assert.equal(res.status, 404, id);
    assert.deepEqual(res.body, { code: 'not_found', message: `invoice ${id} not found`, details: null });
    for (const action of ['void', 'mark-uncollectible']) {
      const change = await app.request('POST', `/api/invoices/${id}/${action}`);
      assert.equal(change.status, 404, `${action} ${id}`);
      assert.equal(change.body.code, 'not_found');
    }
  }
  assert.equal(await countEvents(app, 'invoice.voided'), 0);
});

test('void moves open to void with voided_at now and emits invoice.voided once', async (t) => {
  const app = await buildTestApp(t);
  const invoice = await openInvoice(app);
  app.clock.advance(60_000);
  const res = await app.request('POST', `/api/invoices/${invoice.id}/void`);
  assert.equal(res.status, 200);
  assert.equal(res.body.status, 'void');
  assert.equal(res.body.voided_at, app.clock.now().toISOString());
  assert.equal(res.body.updated_at, app.clock.now().toISOString());
  assert.equal(res.body.paid_at, null);
  assert.deepEqual((await app.request('GET', `/api/invoices/${invoice.id}`)).body, {
    ...res.body,
    payment_attempts: [],
  });
  const events = await app.request('GET', '/api/events?topic=invoice.voided');
  assert.equal(events.body.meta.total, 1);
  assert.deepEqual(events.body.data[0].data, res.body);
});

test('void moves uncollectible to void; a JSON body or an empty JSON body is accepted', async (t) => {
  const app = await buildTestApp(t);
  const invoice = await uncollectibleInvoice(app);
  const res = await app.request('POST', `/api/invoices/${invoice.id}/void`, {
    rawBody: '',
    headers: { 'content-type': 'application/json' },
  });
  assert.equal(res.status, 200);
  assert.equal(res.body.status, 'void');
  const other = await openInvoice(app);
  const withBody = await app.request('POST', `/api/invoices/${other.id}/void`, { body: {} });
  assert.equal(withBody.status, 200);
  assert.equal(await countEvents(app, 'invoice.voided'), 2);
});

test('void of a paid or void invoice is 409 with the exact body, changes nothing and emits nothing', async (t) => {
  const app = await buildTestApp(t);
  const paid = await markTestInvoicePaid(app, (await openInvoice(app)).id);
  const voided = await voidedInvoice(app);
  app.clock.advance(1000);
  for (const invoice of [paid, voided]) {
    const res = await app.request('POST', `/api/invoices/${invoice.id}/void`);
    assert.equal(res.status, 409, invoice.status);
    assert.equal(res.text, JSON.stringify(CANNOT_VOID_BODY));
    assert.deepEqual((await app.request('GET', `/api/invoices/${invoice.id}`)).body, {
      ...invoice,
      payment_attempts: [],
    });
  }
  assert.equal(await countEvents(app, 'invoice.voided'), 1);
});

test('mark-uncollectible moves open to uncollectible, still owing, and emits invoice.marked_uncollectible once', async (t) => {
  const app = await buildTestApp(t);
  const invoice = await openInvoice(app);
  app.clock.advance(60_000);
  const res = await app.request('POST', `/api/invoices/${invoice.id}/mark-uncollectible`);
  assert.equal(res.status, 200);
  assert.equal(res.body.status, 'uncollectible');
  assert.equal(res.body.amount_remaining, invoice.amount_due);
  assert.equal(res.body.updated_at, app.clock.now().toISOString());
  assert.equal(res.body.voided_at, null);
  const events = await app.request('GET', '/api/events?topic=invoice.marked_uncollectible');
  assert.equal(events.body.meta.total, 1);
  assert.deepEqual(events.body.data[0].data, res.body);
  // Still payable: settlement may pay it later.
  const paid = await markTestInvoicePaid(app, invoice.id);
  assert.equal(paid.status, 'paid');
});

test('mark-uncollectible of an uncollectible, paid or void invoice is 409 with the exact body and emits nothing', async (t) => {
  const app = await buildTestApp(t);
  const uncollectible = await uncollectibleInvoice(app);
  const paid = await markTestInvoicePaid(app, (await openInvoice(app)).id);
  const voided = await voidedInvoice(app);
  app.clock.advance(1000);
  for (const invoice of [uncollectible, paid, voided]) {
    const res = await app.request('POST', `/api/invoices/${invoice.id}/mark-uncollectible`);
    assert.equal(res.status, 409, invoice.status);
    assert.equal(res.text, JSON.stringify(CANNOT_MARK_BODY));
    assert.deepEqual((await app.request('GET', `/api/invoices/${invoice.id}`)).body, {
      ...invoice,
      payment_attempts: [],
    });
  }
  assert.equal(await countEvents(app, 'invoice.marked_uncollectible'), 1);
});

test('void and mark-uncollectible replayed with the same Idempotency-Key return the first 200; a new key is 409', async (t) => {
  const app = await buildTestApp(t);
  for (const [action, refusal] of [
    ['void', CANNOT_VOID_BODY],
    ['mark-uncollectible', CANNOT_MARK_BODY],
  ] as const) {
    const invoice = await openInvoice(app);
    const path = `/api/invoices/${invoice.id}/${action}`;
    const first = await app.request('POST', path, { headers: { 'idempotency-key': `${action}-1` } });
    assert.equal(first.status, 200);
    assert.equal(first.headers.get('idempotent-replayed'), null);
    app.clock.advance(1000);
    const replay = await app.request('POST', path, { headers: { 'idempotency-key': `${action}-1` } });
    assert.equal(replay.status, 200);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(replay.body, first.body);
    const fresh = await app.request('POST', path, { headers: { 'idempotency-key': `${action}-2` } });
    assert.equal(fresh.status, 409);
    assert.deepEqual(fresh.body, refusal);
  }
  assert.equal(await countEvents(app, 'invoice.voided'), 1);
  assert.equal(await countEvents(app, 'invoice.marked_uncollectible'), 1);
});

test('a read key may list and get invoices but not void or mark them (403)', async (t) => {
  const app = await buildTestApp(t, { env: { API_KEYS: 'test_admin_key_0123456789abcdef' } });
  const invoice = await openInvoice(app);
  const created = await app.request('POST', '/api/api-keys', { body: { name: 'reader', scope: 'read' } });
  assert.equal(created.status, 201);
  const key = created.body.key as string;
  assert.equal((await app.request('GET', '/api/invoices', { key })).status, 200);
  assert.equal((await app.request('GET', `/api/invoices/${invoice.id}`, { key })).status, 200);
  for (const action of ['void', 'mark-uncollectible']) {
    const res = await app.request('POST', `/api/invoices/${invoice.id}/${action}`, { key });
    assert.equal(res.status, 403, action);
    assert.equal(res.body.code, 'permission_error');
  }
  assert.equal((await app.request('GET', `/api/invoices/${invoice.id}`)).body.status, 'open');
});

test('voiding the invoice an open dunning case chases closes the case as cancelled; other cases stay open', async (t) => {
  const app = await buildTestApp(t);
  const chased = await openInvoice(app);
  const dunning = await openTestDunningCase(app, chased);
  const otherInvoice = await openInvoice(app);
  const otherCase = await openTestDunningCase(app, otherInvoice);
  app.clock.advance(60_000);
  const res = await app.request('POST', `/api/invoices/${chased.id}/void`);
  assert.equal(res.status, 200);
  const closed = await app.request('GET', `/api/dunning/cases/${dunning.id}`);
  assert.equal(closed.body.status, 'cancelled');
  assert.equal(closed.body.closed_at, app.clock.now().toISOString());
  assert.equal(closed.body.next_action_at, null);
  assert.equal((await app.request('GET', `/api/dunning/cases/${otherCase.id}`)).body.status, 'open');
  // Closing the case is told by invoice.voided; no dunning event of its own.
  assert.equal(await countEvents(app, 'dunning.recovered'), 0);
  assert.equal(await countEvents(app, 'dunning.exhausted'), 0);
});

test('marking the chased invoice uncollectible closes its dunning case as cancelled too', async (t) => {
  const app = await buildTestApp(t);
  const chased = await openInvoice(app);
  const dunning = await openTestDunningCase(app, chased);
  const res = await app.request('POST', `/api/invoices/${chased.id}/mark-uncollectible`);
  assert.equal(res.status, 200);
  assert.equal((await app.request('GET', `/api/dunning/cases/${dunning.id}`)).body.status, 'cancelled');
  // A refused request closes nothing: the case of a paid invoice stays as it is.
  const paid = await openInvoice(app);
  const paidCase = await openTestDunningCase(app, paid);
  await markTestInvoicePaid(app, paid.id);
  assert.equal((await app.request('POST', `/api/invoices/${paid.id}/void`)).status, 409);
  assert.equal((await app.request('GET', `/api/dunning/cases/${paidCase.id}`)).body.status, 'open');
});

test('concurrent voids and marks of one invoice: exactly one wins, the rest are 409, one event', async (t) => {
  const app = await buildTestApp(t);
  const invoice = await openInvoice(app);
  const results = await Promise.all(
    Array.from({ length: 6 }, (_, i) =>
      app.request('POST', `/api/invoices/${invoice.id}/${i % 2 === 0 ? 'void' : 'mark-uncollectible'}`),
    ),
  );
  const statuses = results.map((r) => r.status);
  assert.ok(
    statuses.every((s) => s === 200 || s === 409),
    statuses.join(','),
  );
  const final = (await app.request('GET', `/api/invoices/${invoice.id}`)).body;
  const voided = await countEvents(app, 'invoice.voided');
  const marked = await countEvents(app, 'invoice.marked_uncollectible');
  // Void always ends it: at most one mark (before any void), exactly one void.
  assert.equal(final.status, 'void');
  assert.equal(voided, 1);
  assert.ok(marked <= 1);
  assert.equal(statuses.filter((s) => s === 200).length, voided + marked);
});
