// The taxes step (SPEC §14), without a database: SPEC's worked examples to the minor unit,
// exclusive and inclusive, after a discount, several rates, exemption and reverse charge,
// and a property that the amounts are exact (BigInt) for every percentage of 4 decimals.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { periodInvoiceInput } from './input.ts';
import { composeInvoice, PIPELINE } from './pipeline.ts';
import { taxes } from './taxes.ts';
import type { ComposeInput, ComposeStep, ComposeTaxExempt, ComposeTaxRate, InvoiceLineDraft } from './types.ts';

const START = '2026-01-15T10:00:00.000Z';
const END = '2026-02-15T10:00:00.000Z';
const PLAN = { id: 'plan_01JD3Q7Z8X9Y0A1B2C3D4E5F6G', name: 'Pro', amount: 4900, currency: 'EUR' };
const VAT = 'txr_01JD3Q7Z8X9Y0A1B2C3D4E5F6G';

function rate(percentage_e4: number, inclusive: boolean, id = VAT, display_name = 'VAT'): ComposeTaxRate {
  return { id, display_name, percentage_e4, inclusive };
}

function input(taxRates: ComposeTaxRate[], taxExempt: ComposeTaxExempt = 'none', amount = 4900): ComposeInput {
  return periodInvoiceInput({
    reason: 'renewal',
    customerId: 'cus_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
    subscriptionId: 'sub_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
    plan: { ...PLAN, amount },
    periodStart: START,
    periodEnd: END,
    taxRates,
    taxExempt,
  });
}

/**
 * A hand-made 20 % discount, standing in for the coupons step (SPEC §14) until it exists:
 * −round(20 % of the lines so far), inserted where PIPELINE has its discounts step.
 */
const twentyPercentOff: ComposeStep = (lines) => {
  const base = lines.reduce((sum, l) => sum + l.amount, 0);
  const discount: InvoiceLineDraft = {
    kind: 'discount',
    description: '20% off',
    amount: -Math.round((base * 20) / 100),
    currency: 'EUR',
    quantity: 1,
    unit_amount: null,
    period_start: START,
    period_end: END,
    plan_id: null,
    coupon_id: 'coupon_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
    proration: false,
  };
  return [...lines, discount];
};
const withDiscount = [...PIPELINE.slice(0, 4), twentyPercentOff, PIPELINE[4]!];

/** [subtotal, total_discount, total_tax, total, amount_due] of a composed invoice. */
function totals(composed: ReturnType<typeof composeInvoice>): number[] {
  return [composed.subtotal, composed.total_discount, composed.total_tax, composed.total, composed.amount_due];
}

test('€49.00 with 19 % VAT exclusive: tax 9.31 added, total 58.31', () => {
  const composed = composeInvoice(input([rate(190000, false)]));
  assert.deepEqual(totals(composed), [4900, 0, 931, 5831, 5831]);
  assert.deepEqual(composed.lines[1], {
    kind: 'tax',
    description: 'VAT 19%',
    amount: 931,
    currency: 'EUR',
    quantity: 1,
    unit_amount: null,
    period_start: START,
    period_end: END,
    plan_id: null,
    tax_rate_id: VAT,
    inclusive: false,
    proration: false,
  });
  assert.deepEqual(composed.total_tax_amounts, [
    { tax_rate_id: VAT, display_name: 'VAT', percentage: 19, inclusive: false, amount: 931 },
  ]);
  assert.equal(composed.reverse_charge, false);
});

test('€49.00 with 19 % VAT inclusive: tax 7.82 shown, total 49.00 unchanged', () => {
  const composed = composeInvoice(input([rate(190000, true)]));
  assert.deepEqual(totals(composed), [4900, 0, 782, 4900, 4900]);
  assert.deepEqual(
    composed.lines.map((l) => [l.kind, l.description, l.amount, l.inclusive]),
    [
      ['subscription', 'Pro × 1, 15 Jan 2026 – 15 Feb 2026', 4900, undefined],
      ['tax', 'VAT 19% (included)', 782, true],
    ],
  );
  assert.deepEqual(composed.total_tax_amounts, [
    { tax_rate_id: VAT, display_name: 'VAT', percentage: 19, inclusive: true, amount: 782 },
  ]);
});

test('20 % off €49.00 with 19 % VAT exclusive: discount 9.80, tax 7.45, total 46.65 (discounts come first)', () => {
  const composed = composeInvoice(input([rate(190000, false)]), withDiscount);
  assert.deepEqual(
    composed.lines.map((l) => [l.kind, l.amount]),
    [
      ['subscription', 4900],
      ['discount', -980],
      ['tax', 745],
    ],
  );
  assert.deepEqual(totals(composed), [4900, 980, 745, 4665, 4665]);
});

test('20 % off €49.00 with 19 % VAT inclusive: discount 9.80, tax 6.26 shown, total 39.20', () => {
  const composed = composeInvoice(input([rate(190000, true)]), withDiscount);
  // 3920 − round(3920 / 1.19) = 3920 − round(3294.12) = 626.
  assert.deepEqual(totals(composed), [4900, 980, 626, 3920, 3920]);
  assert.deepEqual(
    composed.total_tax_amounts.map((a) => [a.amount, a.inclusive]),
    [[626, true]],
  );
});

test('an exempt customer pays no tax; a reverse-charged one neither, and the invoice says reverse_charge', () => {
  for (const [exempt, reverse] of [
    ['exempt', false],
    ['reverse', true],
  ] as const) {
    const composed = composeInvoice(input([rate(190000, false)], exempt));
    assert.deepEqual(totals(composed), [4900, 0, 0, 4900, 4900], exempt);
    assert.deepEqual(composed.total_tax_amounts, [], exempt);
    assert.equal(composed.lines.length, 1, exempt);
    assert.equal(composed.reverse_charge, reverse, exempt);
  }
});

test('several rates: one line each, exclusive ones on the net of inclusive ones', () => {
  const state = rate(72500, false, 'txr_01JD3Q7Z8X9Y0A1B2C3D4E5F6H', 'State tax');
  const city = rate(10000, false, 'txr_01JD3Q7Z8X9Y0A1B2C3D4E5F6J', 'City tax');
  // 10,000 × 7.25 % = 725; × 1 % = 100.
  const both = composeInvoice(input([state, city], 'none', 10000));
  assert.deepEqual(
    both.lines.map((l) => [l.description, l.amount]),
    [
      ['Pro × 1, 15 Jan 2026 – 15 Feb 2026', 10000],
      ['State tax 7.25%', 725],
      ['City tax 1%', 100],
    ],
  );
  assert.equal(both.total, 10825);
  // Two inclusive rates share taxable − round(taxable / 1.26): 10,000 − 7,937 = 2,063.
  const vat = rate(190000, true);
  const levy = rate(70000, true, 'txr_01JD3Q7Z8X9Y0A1B2C3D4E5F6K', 'Levy');
  const shared = composeInvoice(input([vat, levy, city], 'none', 10000));
  assert.deepEqual(
    shared.lines.slice(1).map((l) => [l.description, l.amount]),
    [
      ['VAT 19% (included)', 1508],
      ['Levy 7% (included)', 555],
      ['City tax 1%', 79],
    ],
  );
  assert.deepEqual([shared.total_tax, shared.total], [2142, 10079]);
});

test('a credit invoice is taxed negatively; an invoice with no lines gets no tax line', () => {
  const credit = periodInvoiceInput({
    reason: 'one_off',
    customerId: 'cus_1',
    subscriptionId: 'sub_1',
    plan: PLAN,
    periodStart: START,
    periodEnd: END,
    taxRates: [rate(190000, false)],
  });
  const refund: InvoiceLineDraft = {
    kind: 'proration',
    description: 'Unused time',
    amount: -2450,
    currency: 'EUR',
    quantity: 1,
    unit_amount: null,
    period_start: START,
    period_end: END,
    plan_id: PLAN.id,
    proration: true,
  };
  const composed = composeInvoice({ ...credit, subscription: null, pending_items: [refund] });
  // −2450 × 0.19 = −465.5 → −466 (half away from zero).
  assert.deepEqual(totals(composed), [-2450, 0, -466, -2916, 0]);
  assert.deepEqual(taxes([], { ...credit, subscription: null }), []);
});

test('property: every tax line is the exact rounded fraction, whatever the percentage (4 decimals) and amount', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 1_000_000 }),
      fc.integer({ min: 0, max: 1_000_000_000_000 }),
      fc.boolean(),
      (e4, amount, inclusive) => {
        const composed = composeInvoice(input([rate(e4, inclusive)], 'none', amount));
        const tax = composed.total_tax;
        const a = BigInt(amount);
        if (inclusive) {
          // net = round(a / (1 + p)) exactly: |net × (1e6 + e4) − a × 1e6| ≤ (1e6 + e4) / 2.
          const net = a - BigInt(tax);
          const error = net * BigInt(1_000_000 + e4) - a * 1_000_000n;
          assert.ok(2n * (error < 0n ? -error : error) <= BigInt(1_000_000 + e4));
          assert.equal(composed.total, amount);
        } else {
          const error = BigInt(tax) * 1_000_000n - a * BigInt(e4);
          assert.ok(2n * (error < 0n ? -error : error) <= 1_000_000n);
          assert.equal(composed.total, amount + tax);
        }
        assert.ok(tax >= 0 && tax <= amount);
      },
    ),
    { numRuns: 500 },
  );
});
