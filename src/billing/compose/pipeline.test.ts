// The composing pipeline (SPEC §12), without a database: each step, the order, the totals,
// the credit applied, the refusals, and that a new step is one function plus one line.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { applyCredit } from './credit.ts';
import { discounts } from './discounts.ts';
import { AmountOutOfRangeError, ComposeInputError } from './errors.ts';
import { periodInvoiceInput } from './input.ts';
import { composeInvoice, PIPELINE } from './pipeline.ts';
import { taxes } from './taxes.ts';
import type { ComposeInput, ComposeStep, InvoiceLineDraft } from './types.ts';
import { usage } from './usage.ts';

const START = '2026-01-15T10:00:00.000Z';
const END = '2026-02-15T10:00:00.000Z';
const PLAN = { id: 'plan_01JD3Q7Z8X9Y0A1B2C3D4E5F6G', name: 'Pro', amount: 5000, currency: 'NGN' };

function input(overrides: Partial<ComposeInput> = {}, quantity = 1): ComposeInput {
  return {
    ...periodInvoiceInput({
      reason: 'renewal',
      customerId: 'cus_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
      subscriptionId: 'sub_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
      plan: PLAN,
      periodStart: START,
      periodEnd: END,
      quantity,
    }),
    ...overrides,
  };
}

/** A line of `kind` for `amount` NGN over the period (test data). */
function line(kind: InvoiceLineDraft['kind'], amount: number, description = `${kind} ${amount}`): InvoiceLineDraft {
  return {
    kind,
    description,
    amount,
    currency: 'NGN',
    quantity: 1,
    unit_amount: null,
    period_start: START,
    period_end: END,
    plan_id: null,
    proration: kind === 'proration',
  };
}

/** A test-only step appending `added`: what a new file in compose/ would export. */
const appending =
  (...added: InvoiceLineDraft[]): ComposeStep =>
  (lines) => [...lines, ...added];

test('the pipeline is fees → prorations → usage → discounts → taxes', () => {
  assert.deepEqual(
    PIPELINE.map((step) => step.name),
    ['fees', 'prorations', 'usage', 'discounts', 'taxes'],
  );
});

test('a flat plan: one subscription line, price × 1; subtotal = total = amount_due', () => {
  assert.deepEqual(composeInvoice(input()), {
    lines: [
      {
        kind: 'subscription',
        description: 'Pro × 1, 15 Jan 2026 – 15 Feb 2026',
        amount: 5000,
        currency: 'NGN',
        quantity: 1,
        unit_amount: 5000,
        period_start: START,
        period_end: END,
        plan_id: PLAN.id,
        proration: false,
      },
    ],
    subtotal: 5000,
    total_discount: 0,
    total_tax: 0,
    total_tax_amounts: [],
    reverse_charge: false,
    total: 5000,
    applied_balance: 0,
    amount_due: 5000,
  });
});

test('fees bill price × quantity, described with the quantity; PostgreSQL bigint text is read as a number', () => {
  const composed = composeInvoice(input({}, 3));
  assert.deepEqual(
    composed.lines.map((l) => [l.description, l.amount, l.unit_amount, l.quantity]),
    [['Pro × 3, 15 Jan 2026 – 15 Feb 2026', 15000, 5000, 3]],
  );
  assert.equal(composed.amount_due, 15000);
  const fromPostgres = periodInvoiceInput({
    reason: 'first_period',
    customerId: 'cus_1',
    subscriptionId: 'sub_1',
    plan: { ...PLAN, amount: '5000' as unknown as number },
    periodStart: START,
    periodEnd: END,
  });
  assert.equal(composeInvoice(fromPostgres).total, 5000);
});

test('a one-off invoice has no subscription fee: no lines, nothing due', () => {
  assert.deepEqual(composeInvoice(input({ reason: 'one_off', subscription: null })), {
    lines: [],
    subtotal: 0,
    total_discount: 0,
    total_tax: 0,
    total_tax_amounts: [],
    reverse_charge: false,
    total: 0,
    applied_balance: 0,
    amount_due: 0,
  });
});

test('pending proration items become lines after the fee, in their order; anything else pending is refused', () => {
  const credit = line('proration', -2500, 'Unused time on Pro × 1 after 30 Jan 2026');
  const charge = line('proration', 4000, 'Remaining time on Business × 1 after 30 Jan 2026');
  const composed = composeInvoice(input({ pending_items: [credit, charge] }));
  assert.deepEqual(
    composed.lines.map((l) => [l.kind, l.amount, l.proration]),
    [
      ['subscription', 5000, false],
      ['proration', -2500, true],
      ['proration', 4000, true],
    ],
  );
  assert.equal(composed.subtotal, 6500);
  assert.equal(composed.total, 6500);
  assert.throws(
    () => composeInvoice(input({ pending_items: [line('adjustment', 100)] })),
    (error: unknown) =>
      error instanceof ComposeInputError && /must be a proration, not "adjustment"/.test(error.message),
  );
  assert.throws(() => composeInvoice(input({ pending_items: [{ ...credit, proration: false }] })), ComposeInputError);
});

test('usage without usage, discounts without a discount and taxes without a rate: the same lines, untouched', () => {
  const lines = [line('subscription', 5000), line('proration', -10), line('discount', -100), line('tax', 75)];
  for (const step of [usage, discounts, taxes]) assert.equal(step(lines, input()), lines, step.name);
});

test('adding a step is one function plus one line: a fixed adjustment after prorations, in a copy of the pipeline', () => {
  const goodwill: ComposeStep = function adjustments(lines) {
    return [...lines, line('adjustment', -700, 'Goodwill credit')];
  };
  const steps = [...PIPELINE.slice(0, 2), goodwill, ...PIPELINE.slice(2)];
  const composed = composeInvoice(input({ pending_items: [line('proration', 1200)] }), steps);
  assert.deepEqual(
    composed.lines.map((l) => [l.kind, l.amount]),
    [
      ['subscription', 5000],
      ['proration', 1200],
      ['adjustment', -700],
    ],
  );
  assert.deepEqual(
    steps.map((step) => step.name),
    ['fees', 'prorations', 'adjustments', 'usage', 'discounts', 'taxes'],
  );
  assert.equal(composed.subtotal, 5500);
  assert.equal(composed.total, 5500);
  assert.equal(composed.amount_due, 5500);
  assert.equal(PIPELINE.length, 5, 'the pipeline itself is unchanged');
});

test('totals: subtotal before discounts and taxes, total_discount positive, total_tax, total = every line', () => {
  const steps = [...PIPELINE, appending(line('adjustment', 300), line('discount', -1000), line('tax', 645))];
  const composed = composeInvoice(input(), steps);
  assert.deepEqual(
    [composed.subtotal, composed.total_discount, composed.total_tax, composed.total, composed.amount_due],
    [5300, 1000, 645, 4945, 4945],
  );
  assert.throws(
    () => composeInvoice(input(), [...PIPELINE, appending(line('discount', 1))]),
    (error: unknown) => error instanceof ComposeInputError && /a discount is ≤ 0/.test(error.message),
  );
});

test('the credit balance pays what it can of a positive total, after taxes; a negative total owes and takes nothing', () => {
  const balance = (amount: number) => ({ customer: { id: 'cus_1', balance: amount } });
  assert.deepEqual(pick(composeInvoice(input(balance(2000)))), [5000, 2000, 3000]);
  assert.deepEqual(pick(composeInvoice(input(balance(9000)))), [5000, 5000, 0]);
  assert.deepEqual(pick(composeInvoice(input(balance(5000)))), [5000, 5000, 0]);
  const creditInvoice = input({ ...balance(800), pending_items: [line('proration', -7000)] });
  assert.deepEqual(pick(composeInvoice(creditInvoice)), [-2000, 0, 0]);
  assert.deepEqual(applyCredit(0, 100), { applied_balance: 0, amount_due: 0 });
  for (const bad of [-1, 0.5, Number.NaN]) {
    assert.throws(() => composeInvoice(input(balance(bad))), ComposeInputError, String(bad));
  }
});

function pick(composed: ReturnType<typeof composeInvoice>): number[] {
  return [composed.total, composed.applied_balance, composed.amount_due];
}

test('amounts beyond Number.MAX_SAFE_INTEGER are refused with AmountOutOfRangeError, never rounded twice', () => {
  const max = Number.MAX_SAFE_INTEGER;
  // 1e12 (the largest plan price) × 10,000 units is 1e16 > 2^53 − 1.
  const huge = {
    ...input(),
    subscription: { ...input().subscription!, plan: { ...PLAN, amount: 1e12 }, quantity: 10_000 },
  };
  assert.throws(
    () => composeInvoice(huge),
    (error: unknown) => {
      assert.ok(error instanceof AmountOutOfRangeError);
      assert.equal(error.amount, 10n ** 16n);
      assert.match(error.message, /^Pro × 10000 \(10000000000000000 minor units\) exceeds 9007199254740991/);
      return true;
    },
  );
  const oneOff = input({ reason: 'one_off', subscription: null });
  assert.equal(composeInvoice(oneOff, [appending(line('adjustment', max))]).total, max);
  assert.throws(() => composeInvoice(oneOff, [appending(line('adjustment', max + 1))]), AmountOutOfRangeError);
  assert.throws(
    () => composeInvoice(oneOff, [appending(line('adjustment', max), line('adjustment', 1))]),
    (error: unknown) => error instanceof AmountOutOfRangeError && /^the invoice total/.test(error.message),
  );
  assert.equal(
    composeInvoice(oneOff, [appending(line('adjustment', max), line('adjustment', 1), line('adjustment', -1))]).total,
    max,
  );
});

test('a line in another currency or with an unrounded amount is refused', () => {
  assert.throws(
    () => composeInvoice(input(), [...PIPELINE, appending({ ...line('adjustment', 10), currency: 'USD' })]),
    (error: unknown) => error instanceof ComposeInputError && /is in USD, the invoice in NGN/.test(error.message),
  );
  assert.throws(
    () => composeInvoice(input(), [...PIPELINE, appending(line('adjustment', 10.5))]),
    (error: unknown) => error instanceof ComposeInputError && /rounded minor units/.test(error.message),
  );
  assert.throws(() => composeInvoice({ ...input(), currency: 'USD' }), ComposeInputError);
  const bad: [number, number][] = [
    [-1, 1],
    [1.5, 1],
    [5000, 0],
  ];
  for (const [amount, quantity] of bad) {
    const given = { ...input(), subscription: { ...input().subscription!, plan: { ...PLAN, amount }, quantity } };
    assert.throws(() => composeInvoice(given), ComposeInputError, `${amount} × ${quantity}`);
  }
});

test('pure: the same input composes the same invoice, and the input is left as it was', () => {
  const given = input({ pending_items: [line('proration', 10)] });
  const before = structuredClone(given);
  assert.deepEqual(composeInvoice(given), composeInvoice(given));
  assert.deepEqual(given, before);
});
