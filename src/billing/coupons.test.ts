// Discounts end to end (SPEC §14), on both databases: a coupon or promotion code redeemed on
// a subscription's creation or on a customer, the discount lines of the invoices issued
// through renewals (the worker at the app's clock), durations, restrictions, a deleted
// coupon, and redemption limits under concurrency.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import { createCustomer, createPlan } from '../../test/helpers/factories.ts';
import { runWorker } from '../../test/helpers/invoice-payments.ts';

const EURO_PLAN = { name: 'Pro', amount: 4900, currency: 'EUR', interval: 'month' };

async function createCoupon(app: TestApp, body: Record<string, unknown>) {
  const res = await app.request('POST', '/api/coupons', { body: { name: 'Launch', duration: 'forever', ...body } });
  assert.equal(res.status, 201, res.text);
  return res.body;
}

async function subscribe(app: TestApp, body: Record<string, unknown>) {
  return app.request('POST', '/api/subscriptions', { body });
}

/** Each invoice of subscription `id`, oldest first: `period_start total_discount amount_due`. */
async function invoiceSummary(app: TestApp, id: string): Promise<string[]> {
  const res = await app.request('GET', `/api/invoices?subscription_id=${id}&sort_order=asc&limit=100`);
  return res.body.data.map(
    (i: { period_start: string; total_discount: number; amount_due: number }) =>
      `${i.period_start.slice(0, 10)} −${i.total_discount} ${i.amount_due}`,
  );
}

/** Pays every open invoice out of band, then moves the clock to `at` and runs the worker (renewals). */
async function payAndRenewAt(app: TestApp, at: string): Promise<void> {
  const open = await app.request('GET', '/api/invoices?status=open&limit=100');
  for (const invoice of open.body.data as { id: string }[]) {
    const paid = await app.request('POST', `/api/invoices/${invoice.id}/pay`, { body: { paid_out_of_band: true } });
    assert.equal(paid.status, 200, paid.text);
  }
  app.clock.set(new Date(at));
  await runWorker(app.deps);
}

test('20 % off €49.00 on a subscription: the first invoice has a −9.80 line; the discount is shown and announced', async (t) => {
  const app = await buildTestApp(t);
  const plan = await createPlan(app, EURO_PLAN);
  const coupon = await createCoupon(app, { percent_off: 20 });
  const customer = await createCustomer(app);
  const res = await subscribe(app, { customer_id: customer.id, plan_id: plan.id, coupon: coupon.id });
  assert.equal(res.status, 201, res.text);
  assert.equal(res.body.discount, undefined, 'the create response is the subscription as its event carries it');
  const discount = (await app.request('GET', `/api/subscriptions/${res.body.id}`)).body.discount;
  assert.match(discount.id, /^di_[0-9A-Z]{26}$/);
  assert.deepEqual(
    [discount.coupon.id, discount.coupon.times_redeemed, discount.subscription_id, discount.start, discount.end],
    [coupon.id, 1, res.body.id, '2026-01-15T10:00:00.000Z', null],
  );
  const list = await app.request('GET', `/api/invoices?subscription_id=${res.body.id}`);
  const invoice = (await app.request('GET', `/api/invoices/${list.body.data[0].id}`)).body;
  assert.deepEqual(
    invoice.lines.map((l: { kind: string; amount: number; description: string; coupon_id?: string }) => [
      l.kind,
      l.amount,
      l.description,
      l.coupon_id ?? null,
    ]),
    [
      ['subscription', 4900, 'Pro × 1, 15 Jan 2026 – 15 Feb 2026', null],
      ['discount', -980, 'Launch (20% off)', coupon.id],
    ],
  );
  assert.deepEqual(
    [invoice.subtotal, invoice.total_discount, invoice.total, invoice.amount_due],
    [4900, 980, 3920, 3920],
  );
  assert.equal((await app.request('GET', `/api/coupons/${coupon.id}`)).body.times_redeemed, 1);
  const events = await app.request('GET', '/api/events?topic=customer.discount.created');
  assert.deepEqual(
    events.body.data.map((e: { data: { id: string } }) => e.data.id),
    [discount.id],
  );
  // The preview of the next renewal takes it too: a forever coupon.
  const preview = (await app.request('POST', '/api/invoices/preview', { body: { subscription_id: res.body.id } })).body;
  assert.deepEqual(
    [preview.period_start, preview.total_discount, preview.amount_due],
    ['2026-02-15T10:00:00.000Z', 980, 3920],
  );
});

test('repeating 3 months discounts invoices 1–3 and stops on the 4th; once discounts only the first', async (t) => {
  const app = await buildTestApp(t);
  const plan = await createPlan(app, EURO_PLAN);
  const threeMonths = await createCoupon(app, { percent_off: 20, duration: 'repeating', duration_in_months: 3 });
  const once = await createCoupon(app, { amount_off: 1000, currency: 'EUR', duration: 'once' });
  const repeating = await subscribe(app, {
    customer_id: (await createCustomer(app)).id,
    plan_id: plan.id,
    coupon: threeMonths.id,
  });
  const first = await subscribe(app, {
    customer_id: (await createCustomer(app)).id,
    plan_id: plan.id,
    coupon: once.id,
  });
  const discountOf = async (id: string) => (await app.request('GET', `/api/subscriptions/${id}`)).body.discount;
  assert.equal((await discountOf(repeating.body.id)).end, '2026-04-15T10:00:00.000Z');
  // A once discount ends with the period of the first invoice, which took it at creation.
  assert.equal((await discountOf(first.body.id)).end, '2026-02-15T10:00:00.000Z');
  for (const at of ['2026-02-15T10:00:00.000Z', '2026-03-15T10:00:00.000Z', '2026-04-15T10:00:00.000Z']) {
    await payAndRenewAt(app, at);
  }
  assert.deepEqual(await invoiceSummary(app, repeating.body.id), [
    '2026-01-15 −980 3920',
    '2026-02-15 −980 3920',
    '2026-03-15 −980 3920',
    '2026-04-15 −0 4900',
  ]);
  assert.deepEqual(await invoiceSummary(app, first.body.id), [
    '2026-01-15 −1000 3900',
    '2026-02-15 −0 4900',
    '2026-03-15 −0 4900',
    '2026-04-15 −0 4900',
  ]);
});

test("a customer's discount (a promotion code typed in any case) applies to all their subscriptions after the subscription's own", async (t) => {
  const app = await buildTestApp(t, { env: { TEST_CLOCKS: 'true' } });
  const plan = await createPlan(app, EURO_PLAN);
  const tenPercent = await createCoupon(app, { name: 'Loyal', percent_off: 10 });
  const twentyPercent = await createCoupon(app, { percent_off: 20 });
  const code = await app.request('POST', '/api/promotion-codes', { body: { code: 'LOYAL10', coupon: tenPercent.id } });
  assert.equal(code.status, 201);
  const customer = await createCustomer(app);
  const patched = await app.request('PATCH', `/api/customers/${customer.id}`, { body: { promotion_code: 'loyal10' } });
  assert.equal(patched.status, 200, patched.text);
  const customerDiscount = async (id: string) => (await app.request('GET', `/api/customers/${id}`)).body.discount;
  const given = await customerDiscount(customer.id);
  assert.deepEqual(
    [given.coupon.id, given.promotion_code, given.subscription_id, given.customer_id],
    [tenPercent.id, code.body.id, null, customer.id],
  );
  const both = await subscribe(app, { customer_id: customer.id, plan_id: plan.id, coupon: twentyPercent.id });
  const only = await subscribe(app, { customer_id: customer.id, plan_id: plan.id });
  assert.deepEqual(await invoiceSummary(app, both.body.id), ['2026-01-15 −1470 3430'], '980 + 490');
  assert.deepEqual(await invoiceSummary(app, only.body.id), ['2026-01-15 −490 4410']);
  assert.equal((await app.request('GET', `/api/promotion-codes/${code.body.id}`)).body.times_redeemed, 1);

  // Removed: the next invoices take only the subscription's own.
  const removed = await app.request('PATCH', `/api/customers/${customer.id}`, { body: { coupon: null } });
  assert.deepEqual([removed.status, await customerDiscount(customer.id)], [200, undefined]);
  await payAndRenewAt(app, '2026-02-15T10:00:00.000Z');
  assert.deepEqual((await invoiceSummary(app, both.body.id)).at(-1), '2026-02-15 −980 3920');
  assert.deepEqual((await invoiceSummary(app, only.body.id)).at(-1), '2026-02-15 −0 4900');
  const created = await app.request('POST', '/api/customers', {
    body: { email: 'new@example.com', coupon: twentyPercent.id },
  });
  assert.deepEqual([created.status, (await customerDiscount(created.body.id)).coupon.id], [201, twentyPercent.id]);
  const topics = (await app.request('GET', '/api/events?topic=customer.discount.deleted')).body.meta.total;
  assert.equal(topics, 1);

  // A test clock's delete takes its customers' discounts with them.
  const clock = await app.request('POST', '/api/test-clocks', { body: { frozen_time: '2026-03-01T00:00:00Z' } });
  const onClock = await createCustomer(app, { test_clock: clock.body.id, coupon: tenPercent.id });
  const clocked = await subscribe(app, { customer_id: onClock.id, plan_id: plan.id, coupon: twentyPercent.id });
  assert.deepEqual(await invoiceSummary(app, clocked.body.id), ['2026-03-01 −1470 3430']);
  assert.equal((await app.request('DELETE', `/api/test-clocks/${clock.body.id}`)).status, 204);
  const left = await app.deps.db.selectFrom('discounts').select('id').where('customer_id', '=', onClock.id).execute();
  assert.deepEqual(left, []);
});

test('restrictions: first-time customers, minimum amount, plans, limits, expiry; a refusal changes nothing', async (t) => {
  const app = await buildTestApp(t);
  const plan = await createPlan(app, EURO_PLAN);
  const cheap = await createPlan(app, { ...EURO_PLAN, name: 'Lite', amount: 900 });
  const coupon = await createCoupon(app, { percent_off: 50, applies_to_plans: [plan.id] });
  const promo = async (code: string, body: Record<string, unknown>) => {
    const res = await app.request('POST', '/api/promotion-codes', { body: { code, coupon: coupon.id, ...body } });
    assert.equal(res.status, 201, res.text);
    return res.body;
  };
  await promo('FIRST', { restrictions: { first_time_transaction: true } });
  await promo('BIG', { restrictions: { minimum_amount: 5000, minimum_amount_currency: 'EUR' } });
  await promo('SOON', { expires_at: '2026-01-20T00:00:00Z' });
  const refused = async (body: Record<string, unknown>, message: RegExp, customerId?: string) => {
    const customer = customerId ?? (await createCustomer(app)).id;
    const res = await subscribe(app, { customer_id: customer, plan_id: plan.id, ...body });
    assert.equal(res.status, 400, JSON.stringify(body));
    assert.equal(res.body.code, 'validation_error');
    assert.match(res.body.message, message);
  };
  // A customer with a paid invoice is not a first-time customer.
  const veteran = await createCustomer(app);
  const firstSub = await subscribe(app, { customer_id: veteran.id, plan_id: plan.id });
  const [invoice] = (await app.request('GET', `/api/invoices?subscription_id=${firstSub.body.id}`)).body.data;
  await app.request('POST', `/api/invoices/${invoice.id}/pay`, { body: { paid_out_of_band: true } });
  await refused({ promotion_code: 'first' }, /is for first-time customers/, veteran.id);
  assert.equal(
    (await subscribe(app, { customer_id: (await createCustomer(app)).id, plan_id: plan.id, promotion_code: 'FIRST' }))
      .status,
    201,
  );
  await refused({ promotion_code: 'BIG', plan_id: cheap.id }, /needs a first invoice of at least 5000 EUR/);
  await refused({ coupon: coupon.id, plan_id: cheap.id }, /does not apply to plan/);
  await refused({ coupon: coupon.id, promotion_code: 'BIG' }, /not both/);
  await refused({ promotion_code: 'NOPE' }, /promotion code NOPE does not exist/);
  await refused({ coupon: 'coupon_01JD3Q7Z8X9Y0A1B2C3D4E5F6G' }, /does not exist/);
  const customerMinimum = await app.request('PATCH', `/api/customers/${veteran.id}`, {
    body: { promotion_code: 'BIG' },
  });
  assert.equal(customerMinimum.status, 400);
  app.clock.set(new Date('2026-01-21T00:00:00Z'));
  await refused({ promotion_code: 'SOON' }, /cannot be redeemed: it expired/);
  // Nothing of the refused requests was kept: one redemption (FIRST), no extra subscriptions.
  assert.equal((await app.request('GET', `/api/coupons/${coupon.id}`)).body.times_redeemed, 1);
  assert.equal((await app.request('GET', '/api/subscriptions')).body.meta.total, 2);

  // A deleted coupon takes no new redemption, while its discounts keep applying.
  const kept = await subscribe(app, {
    customer_id: (await createCustomer(app)).id,
    plan_id: plan.id,
    coupon: coupon.id,
  });
  assert.equal(kept.status, 201);
  assert.equal((await app.request('DELETE', `/api/coupons/${coupon.id}`)).status, 204);
  await refused({ coupon: coupon.id }, /cannot be redeemed: it is deleted/);
  await payAndRenewAt(app, '2026-02-21T10:00:00.000Z');
  assert.deepEqual((await invoiceSummary(app, kept.body.id)).at(-1), '2026-02-21 −2450 2450');
});

test('20 parallel subscriptions with a code whose max_redemptions is 5: exactly 5 succeed, the others 400', async (t) => {
  const app = await buildTestApp(t);
  const plan = await createPlan(app, EURO_PLAN);
  const coupon = await createCoupon(app, { percent_off: 20 });
  const code = await app.request('POST', '/api/promotion-codes', {
    body: { code: 'FIVE', coupon: coupon.id, max_redemptions: 5 },
  });
  const customers = await Promise.all(Array.from({ length: 20 }, () => createCustomer(app)));
  const results = await Promise.all(
    customers.map((customer) => subscribe(app, { customer_id: customer.id, plan_id: plan.id, promotion_code: 'FIVE' })),
  );
  const statuses = results.map((r) => r.status).sort();
  assert.deepEqual(statuses, [...Array(5).fill(201), ...Array(15).fill(400)]);
  for (const refused of results.filter((r) => r.status === 400)) {
    assert.equal(
      refused.body.message,
      'promotion code FIVE cannot be redeemed: it has reached its max_redemptions (5)',
    );
  }
  assert.equal((await app.request('GET', `/api/promotion-codes/${code.body.id}`)).body.times_redeemed, 5);
  assert.equal((await app.request('GET', `/api/coupons/${coupon.id}`)).body.times_redeemed, 5);
  assert.equal((await app.request('GET', '/api/subscriptions')).body.meta.total, 5);
  const discounts = await app.deps.db.selectFrom('discounts').select('id').execute();
  assert.equal(discounts.length, 5);
});
