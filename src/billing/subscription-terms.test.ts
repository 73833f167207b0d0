// PATCH /api/subscriptions/{id} with `coupon`, `promotion_code` and `tax_rate_ids` (SPEC §14,
// as Stripe's subscription update), on both databases: alone they change no plan and issue
// nothing; a discount replaces the subscription's (never two), `coupon: null` or "" removes
// it; tax rates replace the list, [] clears it; `subscription.updated` carries the old values;
// refusals change nothing; the preview with the same fields is what the renewal then issues;
// with a plan change both apply in one transaction and one event; redemption limits hold
// when PATCHes race.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import { createCustomer, createPlan } from '../../test/helpers/factories.ts';
import { runWorker } from '../../test/helpers/invoice-payments.ts';

const EURO_PLAN = { name: 'Pro', amount: 4900, currency: 'EUR', interval: 'month' };
const RENEWAL_AT = '2026-02-15T10:00:00.000Z';

async function createCoupon(app: TestApp, body: Record<string, unknown>) {
  const res = await app.request('POST', '/api/coupons', { body: { name: 'Launch', duration: 'forever', ...body } });
  assert.equal(res.status, 201, res.text);
  return res.body as { id: string };
}

async function createTaxRate(app: TestApp, percentage: number, inclusive = false) {
  const res = await app.request('POST', '/api/tax-rates', {
    body: { display_name: `VAT ${percentage}`, percentage, inclusive },
  });
  assert.equal(res.status, 201, res.text);
  return res.body as { id: string };
}

/** A customer's subscription to a new €49.00 plan, its first invoice paid: active, in 15 Jan – 15 Feb 2026. */
async function activeSubscription(app: TestApp, extra: Record<string, unknown> = {}) {
  const plan = await createPlan(app, EURO_PLAN);
  const customer = await createCustomer(app);
  const res = await app.request('POST', '/api/subscriptions', {
    body: { customer_id: customer.id, plan_id: plan.id, ...extra },
  });
  assert.equal(res.status, 201, res.text);
  await payOpenInvoices(app);
  return { id: res.body.id as string, planId: plan.id as string, customerId: customer.id as string };
}

async function payOpenInvoices(app: TestApp) {
  const open = await app.request('GET', '/api/invoices?status=open&limit=100');
  for (const invoice of open.body.data as { id: string }[]) {
    const paid = await app.request('POST', `/api/invoices/${invoice.id}/pay`, { body: { paid_out_of_band: true } });
    assert.equal(paid.status, 200, paid.text);
  }
}

async function invoicesOf(app: TestApp, subscriptionId: string) {
  const res = await app.request('GET', `/api/invoices?subscription_id=${subscriptionId}&sort_order=asc&limit=100`);
  return res.body.data as Record<string, unknown>[];
}

async function eventsOf(app: TestApp, topic: string) {
  const rows = await app.deps.db
    .selectFrom('events')
    .select(['data'])
    .where('topic', '=', topic)
    .orderBy('id')
    .execute();
  return rows.map((row) => JSON.parse(row.data) as Record<string, any>);
}

/** What a preview and an issued invoice must agree on. */
function billed(invoice: Record<string, any>) {
  return {
    lines: (invoice.lines as Record<string, unknown>[]).map((line) => [line.kind, line.amount, line.description]),
    totals: [invoice.subtotal, invoice.total_discount, invoice.total_tax, invoice.total, invoice.amount_due],
    taxes: invoice.total_tax_amounts,
    period: [invoice.period_start, invoice.period_end],
  };
}

/** Counts that must not move on a refused PATCH. */
async function snapshot(app: TestApp, subscriptionId: string) {
  const db = app.deps.db;
  return {
    subscription: (await app.request('GET', `/api/subscriptions/${subscriptionId}`)).body,
    coupons: await db.selectFrom('coupons').select(['id', 'times_redeemed']).orderBy('id').execute(),
    codes: await db.selectFrom('promotion_codes').select(['id', 'times_redeemed']).orderBy('id').execute(),
    discounts: await db.selectFrom('discounts').selectAll().orderBy('id').execute(),
    events: (await db.selectFrom('events').select('id').execute()).length,
  };
}

test('a coupon alone: the discount is redeemed, no plan change runs, nothing is invoiced; the preview is what the renewal issues', async (t) => {
  const app = await buildTestApp(t);
  const sub = await activeSubscription(app);
  const coupon = await createCoupon(app, { percent_off: 20 });
  const before = (await invoicesOf(app, sub.id)).length;

  const preview = await app.request('POST', '/api/invoices/preview', {
    body: { subscription_id: sub.id, coupon: coupon.id },
  });
  assert.equal(preview.status, 200, preview.text);
  assert.deepEqual(
    preview.body.lines.map((line: { kind: string; amount: number }) => [line.kind, line.amount]),
    [
      ['subscription', 4900],
      ['discount', -980],
    ],
  );
  // The preview stored and redeemed nothing.
  assert.equal((await app.request('GET', `/api/coupons/${coupon.id}`)).body.times_redeemed, 0);
  assert.equal((await app.request('GET', `/api/subscriptions/${sub.id}`)).body.discount, undefined);

  const patched = await app.request('PATCH', `/api/subscriptions/${sub.id}`, { body: { coupon: coupon.id } });
  assert.equal(patched.status, 200, patched.text);
  assert.equal(patched.body.plan_id, sub.planId);
  assert.equal((await invoicesOf(app, sub.id)).length, before, 'nothing invoiced now');
  const shown = (await app.request('GET', `/api/subscriptions/${sub.id}`)).body;
  assert.equal(shown.discount.coupon.id, coupon.id);
  assert.equal(shown.discount.coupon.times_redeemed, 1);
  assert.deepEqual(patched.body, shown, 'the PATCH answers what GET shows, its discount included');
  const updated = (await eventsOf(app, 'subscription.updated')).at(-1)!;
  assert.deepEqual(updated.previous_attributes, { discount: null });

  app.clock.set(new Date(RENEWAL_AT));
  await runWorker(app.deps);
  const renewal = (await invoicesOf(app, sub.id)).at(-1)!;
  assert.equal(renewal.period_start, RENEWAL_AT);
  assert.deepEqual(billed(renewal), billed(preview.body));
});

test('a promotion code replaces the coupon (never two discounts); coupon "" and null remove it; each says what was there', async (t) => {
  const app = await buildTestApp(t);
  const first = await createCoupon(app, { percent_off: 10 });
  const sub = await activeSubscription(app, { coupon: first.id });
  const second = await createCoupon(app, { amount_off: 500, currency: 'EUR' });
  const code = await app.request('POST', '/api/promotion-codes', { body: { code: 'SPRING', coupon: second.id } });
  assert.equal(code.status, 201, code.text);
  const old = (await app.request('GET', `/api/subscriptions/${sub.id}`)).body.discount;

  const patched = await app.request('PATCH', `/api/subscriptions/${sub.id}`, { body: { promotion_code: 'spring' } });
  assert.equal(patched.status, 200, patched.text);
  const discounts = await app.deps.db
    .selectFrom('discounts')
    .selectAll()
    .where('subscription_id', '=', sub.id)
    .execute();
  assert.equal(discounts.length, 1);
  assert.equal(discounts[0]!.coupon_id, second.id);
  assert.equal(discounts[0]!.promotion_code_id, code.body.id);
  const updated = (await eventsOf(app, 'subscription.updated')).at(-1)!;
  assert.equal(updated.previous_attributes.discount.id, old.id);
  assert.equal(updated.previous_attributes.discount.coupon.id, first.id);
  assert.equal((await eventsOf(app, 'customer.discount.deleted')).at(-1)!.id, old.id);

  for (const removal of ['', null]) {
    if (removal === null) {
      assert.equal(
        (await app.request('PATCH', `/api/subscriptions/${sub.id}`, { body: { coupon: first.id } })).status,
        200,
      );
    }
    const removed = await app.request('PATCH', `/api/subscriptions/${sub.id}`, { body: { coupon: removal } });
    assert.equal(removed.status, 200, removed.text);
    assert.deepEqual(removed.body, (await app.request('GET', `/api/subscriptions/${sub.id}`)).body);
    assert.equal(removed.body.discount, undefined);
    assert.ok((await eventsOf(app, 'subscription.updated')).at(-1)!.previous_attributes.discount.id);
  }
  // Removing what is not there changes nothing but says so.
  const again = await app.request('PATCH', `/api/subscriptions/${sub.id}`, { body: { coupon: null } });
  assert.equal(again.status, 200);
  assert.deepEqual((await eventsOf(app, 'subscription.updated')).at(-1)!.previous_attributes, { discount: null });
  // The renewal takes no discount.
  app.clock.set(new Date(RENEWAL_AT));
  await runWorker(app.deps);
  assert.equal((await invoicesOf(app, sub.id)).at(-1)!.total_discount, 0);
});

test('refusals change nothing: an unknown, deleted or exhausted coupon, an exhausted code, both fields, a bad tax rate, an ended subscription', async (t) => {
  const app = await buildTestApp(t);
  const kept = await createCoupon(app, { percent_off: 10 });
  const sub = await activeSubscription(app, { coupon: kept.id });
  const once = await createCoupon(app, { percent_off: 50, max_redemptions: 1 });
  const other = await activeSubscription(app, { coupon: once.id });
  assert.ok(other.id);
  const spent = await app.request('POST', '/api/promotion-codes', {
    body: { code: 'ONCE', coupon: kept.id, max_redemptions: 1 },
  });
  const third = await activeSubscription(app, { promotion_code: 'ONCE' });
  assert.ok(third.id);
  const gone = await createCoupon(app, { percent_off: 5 });
  assert.equal((await app.request('DELETE', `/api/coupons/${gone.id}`)).status, 204);
  const archived = await createTaxRate(app, 19);
  assert.equal((await app.request('PATCH', `/api/tax-rates/${archived.id}`, { body: { active: false } })).status, 200);

  const before = await snapshot(app, sub.id);
  const refusals: [Record<string, unknown>, number, string][] = [
    [{ coupon: 'coupon_01JD3Q7Z8X9Y0A1B2C3D4E5F6G' }, 400, 'coupon'],
    [{ coupon: 'nope\u202e' }, 400, 'coupon'],
    [{ coupon: gone.id }, 400, 'coupon'],
    [{ coupon: once.id }, 400, 'coupon'],
    [{ promotion_code: 'ONCE' }, 400, 'promotion_code'],
    [{ promotion_code: 'NOSUCHCODE' }, 400, 'promotion_code'],
    [{ coupon: kept.id, promotion_code: 'ONCE' }, 400, 'promotion_code'],
    [{ coupon: null, promotion_code: 'ONCE' }, 400, 'promotion_code'],
    [{ tax_rate_ids: ['txr_01JD3Q7Z8X9Y0A1B2C3D4E5F6G'] }, 400, 'tax_rate_ids'],
    [{ tax_rate_ids: [archived.id] }, 400, 'tax_rate_ids'],
    // A valid tax list with a bad coupon: neither applies.
    [{ tax_rate_ids: [], coupon: once.id }, 400, 'coupon'],
    // A bad plan change with a good coupon: neither applies.
    [{ quantity: 1, coupon: kept.id }, 400, ''],
  ];
  for (const [body, status, field] of refusals) {
    const res = await app.request('PATCH', `/api/subscriptions/${sub.id}`, { body });
    assert.equal(res.status, status, `${JSON.stringify(body)}: ${res.text}`);
    assert.equal(res.body.code, 'validation_error');
    if (field) assert.ok(JSON.stringify(res.body).includes(field), res.text);
    assert.doesNotMatch(res.text, /select|insert|stack/i);
  }
  assert.deepEqual(await snapshot(app, sub.id), before);
  assert.equal((await app.request('GET', `/api/promotion-codes/${spent.body.id}`)).body.times_redeemed, 1);
  // The preview refuses the same way, and stores nothing either.
  const preview = await app.request('POST', '/api/invoices/preview', {
    body: { subscription_id: sub.id, coupon: once.id },
  });
  assert.equal(preview.status, 400);

  // Too long, wrong types: the schema's 400.
  for (const body of [{ coupon: 'x'.repeat(65) }, { tax_rate_ids: 'txr_x' }, { promotion_code: '' }, { coupon: 5 }]) {
    assert.equal(
      (await app.request('PATCH', `/api/subscriptions/${sub.id}`, { body })).status,
      400,
      JSON.stringify(body),
    );
  }
  // A cancelled subscription takes no new terms.
  assert.equal((await app.request('PUT', `/api/subscriptions/${sub.id}/cancel`)).status, 200);
  const ended = await app.request('PATCH', `/api/subscriptions/${sub.id}`, { body: { tax_rate_ids: [] } });
  assert.equal(ended.status, 409);
});

test('tax_rate_ids replace the subscription’s rates ([] clears them); the renewal taxes as the preview said', async (t) => {
  const app = await buildTestApp(t);
  const vat = await createTaxRate(app, 19);
  const reduced = await createTaxRate(app, 7, true);
  const sub = await activeSubscription(app, { tax_rate_ids: [reduced.id] });

  const body = { tax_rate_ids: [vat.id] };
  const preview = await app.request('POST', '/api/invoices/preview', { body: { subscription_id: sub.id, ...body } });
  assert.equal(preview.status, 200, preview.text);
  assert.equal(preview.body.total_tax, 931);
  const patched = await app.request('PATCH', `/api/subscriptions/${sub.id}`, { body });
  assert.equal(patched.status, 200, patched.text);
  assert.deepEqual(patched.body.tax_rate_ids, [vat.id]);
  assert.deepEqual((await eventsOf(app, 'subscription.updated')).at(-1)!.previous_attributes, {
    tax_rate_ids: [reduced.id],
  });
  app.clock.set(new Date(RENEWAL_AT));
  await runWorker(app.deps);
  const renewal = (await invoicesOf(app, sub.id)).at(-1)!;
  assert.deepEqual(billed(renewal), billed(preview.body));

  // [] clears the list: no tax on the next preview (no plan, customer or default rates).
  const cleared = await app.request('PATCH', `/api/subscriptions/${sub.id}`, { body: { tax_rate_ids: [] } });
  assert.deepEqual(cleared.body.tax_rate_ids, []);
  const next = await app.request('POST', '/api/invoices/preview', { body: { subscription_id: sub.id } });
  assert.equal(next.body.total_tax, 0);
});

test('a plan change with a coupon and tax rates: one transaction, one subscription.updated with every old value; its invoice takes them', async (t) => {
  const app = await buildTestApp(t);
  const vat = await createTaxRate(app, 10);
  const sub = await activeSubscription(app);
  const coupon = await createCoupon(app, { percent_off: 50 });
  const body = { quantity: 2, proration_behavior: 'create_prorations', coupon: coupon.id, tax_rate_ids: [vat.id] };
  app.clock.set(new Date('2026-01-31T10:00:00.000Z'));
  const preview = await app.request('POST', '/api/invoices/preview', { body: { subscription_id: sub.id, ...body } });
  assert.equal(preview.status, 200, preview.text);
  const eventsBefore = (await eventsOf(app, 'subscription.updated')).length;
  const patched = await app.request('PATCH', `/api/subscriptions/${sub.id}`, { body });
  assert.equal(patched.status, 200, patched.text);
  assert.equal(patched.body.quantity, 2);
  assert.deepEqual(patched.body.tax_rate_ids, [vat.id]);
  const events = await eventsOf(app, 'subscription.updated');
  assert.equal(events.length, eventsBefore + 1);
  assert.deepEqual(Object.keys(events.at(-1)!.previous_attributes).sort(), [
    'discount',
    'pending_update',
    'plan_id',
    'quantity',
    'tax_rate_ids',
  ]);
  assert.equal(events.at(-1)!.previous_attributes.quantity, 1);
  app.clock.set(new Date(RENEWAL_AT));
  await runWorker(app.deps);
  const renewal = (await invoicesOf(app, sub.id)).at(-1)!;
  assert.deepEqual(billed(renewal), billed(preview.body));
  assert.ok((renewal.total_discount as number) > 0);
  assert.ok((renewal.total_tax as number) > 0);
});

test('two PATCHes racing for a coupon with max_redemptions 1: exactly one redemption', async (t) => {
  const app = await buildTestApp(t);
  const coupon = await createCoupon(app, { percent_off: 30, max_redemptions: 1 });
  const a = await activeSubscription(app);
  const b = await activeSubscription(app);
  const results = await Promise.all(
    [a, b].map((sub) => app.request('PATCH', `/api/subscriptions/${sub.id}`, { body: { coupon: coupon.id } })),
  );
  assert.deepEqual(results.map((r) => r.status).sort(), [200, 400]);
  assert.equal((await app.request('GET', `/api/coupons/${coupon.id}`)).body.times_redeemed, 1);
  const discounts = await app.deps.db.selectFrom('discounts').select('id').where('coupon_id', '=', coupon.id).execute();
  assert.equal(discounts.length, 1);

  // The same subscription twice at once, with a fresh limited coupon: one redemption, one discount.
  const again = await createCoupon(app, { percent_off: 30, max_redemptions: 1 });
  const same = await Promise.all(
    [0, 1].map(() => app.request('PATCH', `/api/subscriptions/${a.id}`, { body: { coupon: again.id } })),
  );
  assert.ok(same.some((r) => r.status === 200));
  for (const r of same) assert.ok([200, 400, 409].includes(r.status), r.text);
  assert.equal((await app.request('GET', `/api/coupons/${again.id}`)).body.times_redeemed, 1);
  const own = await app.deps.db
    .selectFrom('discounts')
    .select('coupon_id')
    .where('subscription_id', '=', a.id)
    .execute();
  assert.deepEqual(
    own.map((row) => row.coupon_id),
    [again.id],
  );
});
