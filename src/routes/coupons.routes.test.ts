// /api/coupons and /api/promotion-codes (SPEC §14) over HTTP, on both databases: the
// resources as created, the 400s that store nothing, update and delete, codes unique among
// active ones without case, the list filters, and the events.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import { createPlan } from '../../test/helpers/factories.ts';

async function createCoupon(app: TestApp, body: Record<string, unknown> = {}) {
  const res = await app.request('POST', '/api/coupons', {
    body: { name: 'Launch', percent_off: 20, duration: 'forever', ...body },
  });
  assert.equal(res.status, 201, res.text);
  return res.body;
}

async function topics(app: TestApp, prefix: string): Promise<string[]> {
  const events = (await app.request('GET', '/api/events?limit=100&sort_order=asc')).body.data as { topic: string }[];
  return events.map((e) => e.topic).filter((topic) => topic.startsWith(prefix));
}

test('coupons: create, get, list, update name/metadata, delete (valid false, no new codes); 400s store nothing', async (t) => {
  const app = await buildTestApp(t);
  const plan = await createPlan(app);
  const res = await app.request('POST', '/api/coupons', {
    body: {
      name: 'Launch',
      percent_off: 12.5,
      duration: 'repeating',
      duration_in_months: 3,
      max_redemptions: 10,
      redeem_by: '2026-06-30T00:00:00Z',
      applies_to_plans: [plan.id],
      metadata: { campaign: 'spring' },
    },
  });
  assert.equal(res.status, 201, res.text);
  assert.match(res.body.id, /^coupon_[0-9A-Z]{26}$/);
  assert.deepEqual(res.body, {
    id: res.body.id,
    name: 'Launch',
    percent_off: 12.5,
    amount_off: null,
    currency: null,
    duration: 'repeating',
    duration_in_months: 3,
    max_redemptions: 10,
    redeem_by: '2026-06-30T00:00:00.000Z',
    applies_to_plans: [plan.id],
    times_redeemed: 0,
    valid: true,
    metadata: { campaign: 'spring' },
    created_at: '2026-01-15T10:00:00.000Z',
    updated_at: '2026-01-15T10:00:00.000Z',
    deleted_at: null,
  });
  assert.deepEqual((await app.request('GET', `/api/coupons/${res.body.id}`)).body, res.body);
  const amount = await createCoupon(app, {
    percent_off: undefined,
    amount_off: 500,
    currency: 'EUR',
    duration: 'once',
  });
  assert.deepEqual([amount.percent_off, amount.amount_off, amount.currency], [null, 500, 'EUR']);

  const bad: [Record<string, unknown>, RegExp][] = [
    [{ percent_off: 12.345 }, /at most 2 decimals/],
    [{ percent_off: 0 }, /percent_off/],
    [{ percent_off: 100.01 }, /percent_off/],
    [{ percent_off: 10, amount_off: 100, currency: 'EUR' }, /exactly one of percent_off or amount_off/],
    [{ percent_off: undefined }, /exactly one of percent_off or amount_off/],
    [{ percent_off: undefined, amount_off: 100 }, /amount_off needs a currency/],
    [{ percent_off: undefined, amount_off: 100, currency: 'eur' }, /ISO 4217/],
    [{ currency: 'EUR' }, /currency goes with amount_off only/],
    [{ duration: 'repeating' }, /duration_in_months is required with duration repeating/],
    [{ duration_in_months: 2 }, /duration_in_months is required with duration repeating, and only then/],
    [{ redeem_by: '2026-01-01T00:00:00Z' }, /redeem_by must be in the future/],
    [{ applies_to_plans: ['plan_01JD3Q7Z8X9Y0A1B2C3D4E5F6G'] }, /does not exist/],
    [{ duration: 'sometimes' }, /duration/],
  ];
  for (const [body, message] of bad) {
    const refused = await app.request('POST', '/api/coupons', {
      body: { name: 'X', percent_off: 20, duration: 'forever', ...body },
    });
    assert.equal(refused.status, 400, JSON.stringify(body));
    assert.equal(refused.body.code, 'validation_error');
    assert.match(refused.body.message, message, JSON.stringify(body));
  }
  const list = await app.request('GET', '/api/coupons?sort_by=created_at&sort_order=asc');
  assert.deepEqual(
    [list.body.meta.total, list.body.data.map((c: { id: string }) => c.id)],
    [2, [res.body.id, amount.id]],
  );

  const updated = await app.request('PATCH', `/api/coupons/${res.body.id}`, {
    body: { name: 'Launch (extended)', metadata: { channel: 'email' } },
  });
  assert.equal(updated.status, 200);
  assert.deepEqual(
    [updated.body.name, updated.body.metadata],
    ['Launch (extended)', { campaign: 'spring', channel: 'email' }],
  );
  const fixed = await app.request('PATCH', `/api/coupons/${res.body.id}`, { body: { percent_off: 50 } });
  assert.equal(fixed.status, 400, 'what a coupon takes off is fixed');
  assert.equal((await app.request('GET', `/api/coupons/${res.body.id}`)).body.percent_off, 12.5);

  assert.equal((await app.request('DELETE', `/api/coupons/${amount.id}`)).status, 204);
  const deleted = (await app.request('GET', `/api/coupons/${amount.id}`)).body;
  assert.deepEqual([deleted.valid, deleted.deleted_at], [false, '2026-01-15T10:00:00.000Z']);
  assert.equal((await app.request('DELETE', `/api/coupons/${amount.id}`)).status, 404);
  const code = await app.request('POST', '/api/promotion-codes', { body: { code: 'GONE', coupon: amount.id } });
  assert.equal(code.status, 400);
  assert.match(code.body.message, /is deleted/);
  assert.equal((await app.request('GET', '/api/coupons/coupon_nope')).status, 404);
  assert.deepEqual(await topics(app, 'coupon.'), [
    'coupon.created',
    'coupon.created',
    'coupon.updated',
    'coupon.deleted',
  ]);

  // Past redeem_by the coupon is no longer valid.
  app.clock.set(new Date('2026-07-01T00:00:00Z'));
  assert.equal((await app.request('GET', `/api/coupons/${res.body.id}`)).body.valid, false);
});

test('promotion codes: created with restrictions; the charset; unique among active codes without case', async (t) => {
  const app = await buildTestApp(t);
  const coupon = await createCoupon(app);
  const res = await app.request('POST', '/api/promotion-codes', {
    body: {
      code: 'Spring-2026',
      coupon: coupon.id,
      max_redemptions: 5,
      expires_at: '2026-03-01T00:00:00Z',
      restrictions: { first_time_transaction: true, minimum_amount: 1000, minimum_amount_currency: 'NGN' },
    },
  });
  assert.equal(res.status, 201, res.text);
  assert.match(res.body.id, /^promo_[0-9A-Z]{26}$/);
  assert.deepEqual(res.body, {
    id: res.body.id,
    code: 'Spring-2026',
    coupon_id: coupon.id,
    max_redemptions: 5,
    expires_at: '2026-03-01T00:00:00.000Z',
    restrictions: { first_time_transaction: true, minimum_amount: 1000, minimum_amount_currency: 'NGN' },
    active: true,
    times_redeemed: 0,
    metadata: {},
    created_at: '2026-01-15T10:00:00.000Z',
    updated_at: '2026-01-15T10:00:00.000Z',
  });
  assert.deepEqual((await app.request('GET', `/api/promotion-codes/${res.body.id}`)).body, res.body);

  for (const code of ['ab', 'x'.repeat(41), 'SPRING 2026', 'ÉTÉ', 'a/b']) {
    const refused = await app.request('POST', '/api/promotion-codes', { body: { code, coupon: coupon.id } });
    assert.equal(refused.status, 400, code);
    assert.match(refused.body.message, /3 to 40 letters, digits, "-" or "_"/);
  }
  const unknownCoupon = await app.request('POST', '/api/promotion-codes', {
    body: { code: 'OK123', coupon: 'coupon_01JD3Q7Z8X9Y0A1B2C3D4E5F6G' },
  });
  assert.deepEqual(
    [unknownCoupon.status, unknownCoupon.body.message],
    [400, 'coupon coupon_01JD3Q7Z8X9Y0A1B2C3D4E5F6G does not exist'],
  );
  const halfMinimum = await app.request('POST', '/api/promotion-codes', {
    body: { code: 'OK123', coupon: coupon.id, restrictions: { minimum_amount: 5 } },
  });
  assert.equal(halfMinimum.status, 400);

  const same = await app.request('POST', '/api/promotion-codes', { body: { code: 'SPRING-2026', coupon: coupon.id } });
  assert.equal(same.status, 409);
  assert.deepEqual(same.body, {
    code: 'conflict',
    message: 'an active promotion code SPRING-2026 already exists (codes compare without case)',
    details: null,
  });
  // Deactivated, the code is free again; the old one cannot come back while the new one is active.
  const off = await app.request('PATCH', `/api/promotion-codes/${res.body.id}`, { body: { active: false } });
  assert.deepEqual([off.status, off.body.active], [200, false]);
  const again = await app.request('POST', '/api/promotion-codes', { body: { code: 'spring-2026', coupon: coupon.id } });
  assert.equal(again.status, 201);
  const back = await app.request('PATCH', `/api/promotion-codes/${res.body.id}`, { body: { active: true } });
  assert.equal(back.status, 409);

  const list = async (query: string) =>
    (await app.request('GET', `/api/promotion-codes?${query}`)).body.data.map((p: { id: string }) => p.id);
  assert.deepEqual(await list('code=SPRING-2026&sort_order=asc'), [res.body.id, again.body.id]);
  assert.deepEqual(await list('code=spring-2026&active=true'), [again.body.id]);
  assert.deepEqual(await list('active=false'), [res.body.id]);
  assert.deepEqual(await list(`coupon=${coupon.id}&sort_order=asc`), [res.body.id, again.body.id]);
  assert.deepEqual(await list('coupon=coupon_none'), []);
  assert.equal((await app.request('GET', '/api/promotion-codes?active=maybe')).status, 400);
  assert.deepEqual(await topics(app, 'promotion_code.'), [
    'promotion_code.created',
    'promotion_code.updated',
    'promotion_code.created',
  ]);
});
