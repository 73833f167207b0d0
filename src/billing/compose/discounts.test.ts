// The discounts step (SPEC §14), without a database: worked examples to the minor unit, the
// order and caps of several discounts, plan restrictions, currencies, the end of a discount,
// and properties over random invoices.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { discounts } from './discounts.ts';
import { periodInvoiceInput } from './input.ts';
import { composeInvoice } from './pipeline.ts';
import type { ComposeCoupon, ComposeDiscount, ComposeInput, InvoiceLineDraft } from './types.ts';

const START = '2026-01-15T10:00:00.000Z';
const END = '2026-02-15T10:00:00.000Z';
const PRO = { id: 'plan_01JD3Q7Z8X9Y0A1B2C3D4E5F6G', name: 'Pro', amount: 4900, currency: 'EUR' };
const OTHER_PLAN = 'plan_01JD3Q7Z8X9Y0A1B2C3D4E5F6H';

function coupon(overrides: Partial<ComposeCoupon> = {}): ComposeCoupon {
  return {
    id: 'coupon_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
    name: 'Launch',
    percent_off_bps: null,
    amount_off: null,
    currency: null,
    applies_to_plans: null,
    ...overrides,
  };
}

function discount(
  c: Partial<ComposeCoupon>,
  end: string | null = null,
  id = 'di_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
): ComposeDiscount {
  return { id, coupon: coupon(c), end };
}

function input(list: ComposeDiscount[], plan = PRO, periodStart = START): ComposeInput {
  return periodInvoiceInput({
    reason: 'renewal',
    customerId: 'cus_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
    subscriptionId: 'sub_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
    plan,
    periodStart,
    periodEnd: END,
    discounts: list,
  });
}

test('20 % off €49.00: one discount line of −9.80, subtotal 49.00, total 39.20', () => {
  const composed = composeInvoice(input([discount({ percent_off_bps: 2000 })]));
  assert.deepEqual(composed.lines[1], {
    kind: 'discount',
    description: 'Launch (20% off)',
    amount: -980,
    currency: 'EUR',
    quantity: 1,
    unit_amount: null,
    period_start: START,
    period_end: END,
    plan_id: null,
    coupon_id: 'coupon_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
    proration: false,
  });
  assert.deepEqual(
    [composed.subtotal, composed.total_discount, composed.total, composed.amount_due],
    [4900, 980, 3920, 3920],
  );
});

test('a percentage is rounded once, half away from zero, from the exact 2-decimal value', () => {
  const off = (bps: number, amount: number) =>
    composeInvoice(input([discount({ percent_off_bps: bps })], { ...PRO, amount })).total_discount;
  assert.equal(off(1250, 4), 1, '12.5 % of 4 = 0.5 → 1');
  assert.equal(off(3333, 100), 33, '33.33 % of 100 = 33.33 → 33');
  assert.equal(off(1, 5000), 1, '0.01 % of 5000 = 0.5 → 1');
  assert.equal(off(1, 4999), 0, '0.4999 → 0: no line at all');
  assert.equal(composeInvoice(input([discount({ percent_off_bps: 1 })], { ...PRO, amount: 4999 })).lines.length, 1);
  assert.equal(off(10_000, 4900), 4900, '100 % takes the whole line');
});

test('amount_off applies in its own currency only, and never takes the invoice below zero', () => {
  const fiveEuros = discount({ name: 'Welcome', amount_off: 500, currency: 'EUR' });
  const eur = composeInvoice(input([fiveEuros]));
  assert.deepEqual(
    eur.lines.map((l) => [l.kind, l.amount, l.description]),
    [
      ['subscription', 4900, 'Pro × 1, 15 Jan 2026 – 15 Feb 2026'],
      ['discount', -500, 'Welcome (€5.00 off)'],
    ],
  );
  const inNaira = composeInvoice(input([discount({ amount_off: 500, currency: 'NGN' })]));
  assert.equal(inNaira.lines.length, 1, 'an NGN coupon takes nothing off a EUR invoice');
  const big = composeInvoice(input([discount({ amount_off: 10_000, currency: 'EUR' })]));
  assert.deepEqual([big.total_discount, big.total, big.amount_due], [4900, 0, 0]);
});

test('two discounts: the subscription’s then the customer’s, each on the original amount, capped at what is left', () => {
  const composed = composeInvoice(
    input([
      discount({ name: 'Sub', percent_off_bps: 2000 }, null, 'di_1'),
      discount({ name: 'Customer', percent_off_bps: 1000, id: 'coupon_2' }, null, 'di_2'),
    ]),
  );
  assert.deepEqual(
    composed.lines.slice(1).map((l) => [l.description, l.amount, l.coupon_id]),
    [
      ['Sub (20% off)', -980, 'coupon_01JD3Q7Z8X9Y0A1B2C3D4E5F6G'],
      ['Customer (10% off)', -490, 'coupon_2'],
    ],
  );
  const capped = composeInvoice(
    input([
      discount({ percent_off_bps: 8000 }, null, 'di_1'),
      discount({ amount_off: 2000, currency: 'EUR', id: 'coupon_2' }, null, 'di_2'),
    ]),
  );
  // 80 % = 3920, then €20.00 capped at the 980 left.
  assert.deepEqual(
    capped.lines.slice(1).map((l) => l.amount),
    [-3920, -980],
  );
  assert.equal(capped.total, 0);
});

test('applies_to_plans: only the lines of those plans are the base; other plans’ invoices get no line', () => {
  const onPro = composeInvoice(input([discount({ percent_off_bps: 5000, applies_to_plans: [PRO.id] })]));
  assert.equal(onPro.total_discount, 2450);
  const elsewhere = composeInvoice(input([discount({ percent_off_bps: 5000, applies_to_plans: [OTHER_PLAN] })]));
  assert.equal(elsewhere.lines.length, 1);
  // Proration lines of an allowed plan count; a proration of another plan does not.
  const proration = (amount: number, plan: string): InvoiceLineDraft => ({
    kind: 'proration',
    description: `proration ${amount}`,
    amount,
    currency: 'EUR',
    quantity: 1,
    unit_amount: null,
    period_start: START,
    period_end: END,
    plan_id: plan,
    proration: true,
  });
  const withItems = composeInvoice({
    ...input([discount({ percent_off_bps: 1000, applies_to_plans: [PRO.id] })]),
    pending_items: [proration(1000, PRO.id), proration(3000, OTHER_PLAN)],
  });
  assert.equal(withItems.total_discount, 590, '10 % of 4900 + 1000');
});

test('a discount applies while the invoice period starts before its end', () => {
  const ending = (end: string) => composeInvoice(input([discount({ percent_off_bps: 2000 }, end)])).total_discount;
  assert.equal(ending('2026-01-15T10:00:00.001Z'), 980);
  assert.equal(ending(START), 0, 'a period starting at the end is not discounted');
  assert.equal(ending('2026-01-01T00:00:00.000Z'), 0);
});

test('no discounts, or no lines: the lines as they are', () => {
  const lines = composeInvoice(input([])).lines;
  assert.equal(discounts(lines, input([])), lines);
  const none: InvoiceLineDraft[] = [];
  assert.equal(discounts(none, input([discount({ percent_off_bps: 2000 })])), none);
});

test('property: discount lines are ≤ 0, each at most its base, and the invoice never goes below zero', () => {
  const arbCoupon = fc.oneof(
    fc.record({ percent_off_bps: fc.integer({ min: 1, max: 10_000 }), amount_off: fc.constant(null) }),
    fc.record({ percent_off_bps: fc.constant(null), amount_off: fc.integer({ min: 1, max: 10_000_000 }) }),
  );
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 100_000_000 }),
      fc.integer({ min: 1, max: 50 }),
      fc.array(fc.integer({ min: -1_000_000, max: 1_000_000 }), { maxLength: 4 }),
      fc.array(arbCoupon, { maxLength: 3 }),
      (amount, quantity, items, coupons) => {
        const base = periodInvoiceInput({
          reason: 'renewal',
          customerId: 'cus_1',
          subscriptionId: 'sub_1',
          plan: { ...PRO, amount },
          periodStart: START,
          periodEnd: END,
          quantity,
          discounts: coupons.map((c, i) => discount({ ...c, currency: 'EUR', id: `coupon_${i}` }, null, `di_${i}`)),
        });
        const pending = items.map((a, i): InvoiceLineDraft => ({
          kind: 'proration',
          description: `item ${i}`,
          amount: a,
          currency: 'EUR',
          quantity: 1,
          unit_amount: null,
          period_start: START,
          period_end: END,
          plan_id: PRO.id,
          proration: true,
        }));
        const composed = composeInvoice({ ...base, pending_items: pending });
        const lines = composed.lines.filter((l) => l.kind === 'discount');
        for (const line of lines) assert.ok(line.amount < 0 && -line.amount <= Math.max(composed.subtotal, 0));
        assert.ok(composed.total_discount <= Math.max(composed.subtotal, 0));
        if (composed.subtotal >= 0) assert.ok(composed.total >= 0, `total ${composed.total}`);
        else assert.equal(composed.total_discount, 0, 'a credit invoice takes no discount');
        assert.equal(composed.total, composed.subtotal - composed.total_discount);
      },
    ),
    { numRuns: 300 },
  );
});
