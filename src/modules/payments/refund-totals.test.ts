import assert from 'node:assert/strict';
import { test } from 'node:test';
import { refundedTotal, statusAfterRefunds } from './refund-totals.ts';

test('refunded total is the largest known figure, capped at the amount', () => {
  assert.equal(refundedTotal({ amount: 5000, current: 0, recordedSum: 2000, reportedTotal: null }), 2000);
  assert.equal(refundedTotal({ amount: 5000, current: 3000, recordedSum: 2000, reportedTotal: null }), 3000);
  assert.equal(refundedTotal({ amount: 5000, current: 0, recordedSum: 2000, reportedTotal: 4500 }), 4500);
  assert.equal(refundedTotal({ amount: 5000, current: 4000, recordedSum: 9000, reportedTotal: 7000 }), 5000);
});

test('the same reports in any order end at the same total', () => {
  // Two refunds (1000 then 1500) and the running totals a provider reported after each.
  type Report = { refund: number } | { total: number };
  const reports: Report[] = [{ refund: 1000 }, { total: 1000 }, { refund: 1500 }, { total: 2500 }];
  const orders = [
    [0, 1, 2, 3],
    [3, 2, 1, 0],
    [1, 3, 0, 2],
    [2, 0, 3, 1],
  ];
  const finals = orders.map((order) => {
    let current = 0;
    let recordedSum = 0;
    for (const i of order) {
      const report = reports[i]!;
      if ('refund' in report) recordedSum += report.refund;
      const reportedTotal = 'total' in report ? report.total : null;
      current = refundedTotal({ amount: 5000, current, recordedSum, reportedTotal });
    }
    return current;
  });
  assert.deepEqual(finals, [2500, 2500, 2500, 2500]);
});

test('status follows the refunded total', () => {
  assert.equal(statusAfterRefunds('succeeded', 5000, 0), 'succeeded');
  assert.equal(statusAfterRefunds('succeeded', 5000, 1), 'partially_refunded');
  assert.equal(statusAfterRefunds('partially_refunded', 5000, 5000), 'refunded');
});
