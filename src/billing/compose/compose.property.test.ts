// Properties of the composing pipeline (SPEC §12), pure, over random plans, quantities,
// pending prorations, extra lines of every kind and credit balances: totals are the sums of
// the lines, nothing is ever owed below 0, credit never exceeds the balance, and a flat plan
// owes exactly its price × quantity. Amounts span the whole safe range, so the refusal of an
// amount beyond Number.MAX_SAFE_INTEGER is exercised too.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { AmountOutOfRangeError } from './errors.ts';
import { periodInvoiceInput } from './input.ts';
import { composeInvoice, PIPELINE } from './pipeline.ts';
import type { ComposeInput, InvoiceLineDraft, InvoiceLineKind } from './types.ts';

const MAX = BigInt(Number.MAX_SAFE_INTEGER);
const START = '2026-01-15T10:00:00.000Z';
const END = '2026-02-15T10:00:00.000Z';

function draft(kind: InvoiceLineKind, amount: number): InvoiceLineDraft {
  return {
    kind,
    description: `${kind} line`,
    amount,
    currency: 'EUR',
    quantity: 1,
    unit_amount: null,
    period_start: START,
    period_end: END,
    plan_id: null,
    proration: kind === 'proration',
  };
}

function inputOf(plan: { amount: number; quantity: number } | null, balance: number, pending: number[]): ComposeInput {
  const base = periodInvoiceInput({
    reason: 'renewal',
    customerId: 'cus_1',
    subscriptionId: 'sub_1',
    plan: { id: 'plan_1', name: 'Seat', amount: plan?.amount ?? 0, currency: 'EUR' },
    periodStart: START,
    periodEnd: END,
    quantity: plan?.quantity ?? 1,
    balance,
  });
  return {
    ...base,
    subscription: plan ? base.subscription : null,
    pending_items: pending.map((a) => draft('proration', a)),
  };
}

const amount = fc.oneof(
  fc.integer({ min: -1_000_000, max: 1_000_000 }),
  fc.maxSafeInteger().map((n) => n),
);
const extraLine = fc.oneof(
  fc.tuple(fc.constantFrom<InvoiceLineKind>('subscription', 'usage', 'adjustment', 'tax'), amount),
  fc.tuple(
    fc.constant<InvoiceLineKind>('discount'),
    amount.map((n) => -Math.abs(n)),
  ),
);
const scenario = fc.record({
  plan: fc.option(
    fc.record({
      amount: fc.oneof(fc.integer({ min: 0, max: 100_000 }), fc.integer({ min: 0, max: 1_000_000_000_000 })),
      quantity: fc.oneof(fc.integer({ min: 1, max: 10 }), fc.integer({ min: 1, max: 1_000_000 })),
    }),
  ),
  balance: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 1_000_000 }), fc.maxSafeNat()),
  pending: fc.array(amount, { maxLength: 3 }),
  extra: fc.array(extraLine, { maxLength: 5 }),
});

test('property: totals are sums of the lines, amount_due ≥ 0, applied_balance ≤ balance — or the invoice is refused when an amount is out of range', () => {
  fc.assert(
    fc.property(scenario, ({ plan, balance, pending, extra }) => {
      const input = inputOf(plan, balance, pending);
      const steps = [
        ...PIPELINE,
        (lines: readonly InvoiceLineDraft[]) => [...lines, ...extra.map(([k, a]) => draft(k, a))],
      ];
      // What the lines must be, computed independently with BigInt.
      const expected: [InvoiceLineKind, bigint][] = [
        ...(plan ? [['subscription', BigInt(plan.amount) * BigInt(plan.quantity)] as [InvoiceLineKind, bigint]] : []),
        ...pending.map((a): [InvoiceLineKind, bigint] => ['proration', BigInt(a)]),
        ...extra.map(([k, a]): [InvoiceLineKind, bigint] => [k, BigInt(a)]),
      ];
      const sumOf = (kinds: InvoiceLineKind[]) =>
        expected.filter(([k]) => kinds.includes(k)).reduce((s, [, a]) => s + a, 0n);
      const subtotal = sumOf(['subscription', 'proration', 'usage', 'adjustment']);
      const discount = -sumOf(['discount']);
      const tax = sumOf(['tax']);
      const total = subtotal - discount + tax;
      const outOfRange = [...expected.map(([, a]) => a), subtotal, discount, tax, total].some(
        (a) => a > MAX || a < -MAX,
      );
      if (outOfRange) {
        assert.throws(() => composeInvoice(input, steps), AmountOutOfRangeError);
        return;
      }
      const composed = composeInvoice(input, steps);
      assert.deepEqual(
        composed.lines.map((l) => [l.kind, BigInt(l.amount)]),
        expected,
      );
      // Sums in BigInt: a float sum of safe amounts may pass through an unsafe one and round.
      const linesOf = (kinds: InvoiceLineKind[]) =>
        composed.lines.filter((l) => kinds.includes(l.kind)).reduce((s, l) => s + BigInt(l.amount), 0n);
      assert.equal(BigInt(composed.subtotal), linesOf(['subscription', 'proration', 'usage', 'adjustment']));
      assert.equal(BigInt(composed.total_discount), -linesOf(['discount']));
      assert.ok(composed.total_discount >= 0);
      assert.equal(BigInt(composed.total_tax), linesOf(['tax']));
      assert.equal(
        BigInt(composed.total),
        linesOf(['subscription', 'proration', 'usage', 'adjustment', 'discount', 'tax']),
      );
      assert.equal(
        BigInt(composed.total),
        BigInt(composed.subtotal) - BigInt(composed.total_discount) + BigInt(composed.total_tax),
      );
      assert.ok(composed.amount_due >= 0, 'amount_due ≥ 0');
      assert.ok(composed.applied_balance >= 0 && composed.applied_balance <= balance, 'applied_balance ≤ balance');
      if (composed.total >= 0) assert.equal(composed.amount_due, composed.total - composed.applied_balance);
      else assert.deepEqual([composed.amount_due, composed.applied_balance], [0, 0]);
      // Credit is used up to what is owed: either the balance is exhausted or nothing is left to pay.
      assert.ok(composed.applied_balance === balance || composed.amount_due === 0);
    }),
    { numRuns: 2000 },
  );
});

test('property: a flat plan without balance has subtotal = total = amount_due = price × quantity, in one line', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 1_000_000_000_000 }),
      fc.integer({ min: 1, max: 1_000_000 }),
      (price, quantity) => {
        fc.pre(BigInt(price) * BigInt(quantity) <= MAX);
        const composed = composeInvoice(inputOf({ amount: price, quantity }, 0, []));
        assert.equal(composed.lines.length, 1);
        assert.equal(composed.lines[0]!.kind, 'subscription');
        assert.equal(composed.lines[0]!.unit_amount, price);
        const owed = price * quantity;
        assert.deepEqual(
          [composed.subtotal, composed.total, composed.amount_due, composed.total_discount, composed.total_tax],
          [owed, owed, owed, 0, 0],
        );
        assert.equal(composed.applied_balance, 0);
      },
    ),
    { numRuns: 1000 },
  );
});
