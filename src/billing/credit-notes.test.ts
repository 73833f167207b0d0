// The pure rules of credit notes (SPEC §14): how a note's amount divides before and after
// payment, and how a refund spreads over an invoice's payments.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { splitCredit, spreadRefund } from './credit-notes.ts';

test('splitCredit: what remains owed is lowered first, never below 0; the rest is after payment', () => {
  assert.deepEqual(splitCredit(2000, 5000), { prePayment: 2000, postPayment: 0 });
  assert.deepEqual(splitCredit(5000, 5000), { prePayment: 5000, postPayment: 0 });
  assert.deepEqual(splitCredit(7000, 5000), { prePayment: 5000, postPayment: 2000 });
  assert.deepEqual(splitCredit(10_000, 0), { prePayment: 0, postPayment: 10_000 });
  fc.assert(
    fc.property(fc.nat(1e12), fc.nat(1e12), (amount, remaining) => {
      const { prePayment, postPayment } = splitCredit(amount, remaining);
      return prePayment + postPayment === amount && prePayment <= remaining && prePayment >= 0 && postPayment >= 0;
    }),
  );
});

test('spreadRefund: oldest payment first, each within what it may refund; null when they cannot hold it', () => {
  const payments = [
    { id: 'pay_a', refundable: 3000 },
    { id: 'pay_b', refundable: 0 },
    { id: 'pay_c', refundable: 5000 },
  ];
  assert.deepEqual(spreadRefund(2000, payments), [['pay_a', 2000]]);
  assert.deepEqual(spreadRefund(4500, payments), [
    ['pay_a', 3000],
    ['pay_c', 1500],
  ]);
  assert.deepEqual(spreadRefund(8000, payments), [
    ['pay_a', 3000],
    ['pay_c', 5000],
  ]);
  assert.equal(spreadRefund(8001, payments), null);
  assert.equal(spreadRefund(1, []), null);
  fc.assert(
    fc.property(fc.nat(20_000), fc.array(fc.nat(10_000), { maxLength: 4 }), (amount, refundables) => {
      const list = refundables.map((refundable, i) => ({ id: `p${i}`, refundable }));
      const parts = spreadRefund(amount, list);
      const room = refundables.reduce((sum, r) => sum + r, 0);
      if (parts === null) return amount > room;
      return (
        parts.reduce((sum, [, part]) => sum + part, 0) === amount &&
        parts.every(([id, part]) => part > 0 && part <= list.find((p) => p.id === id)!.refundable)
      );
    }),
  );
});
