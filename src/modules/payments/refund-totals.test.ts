import assert from 'node:assert/strict';
import { test } from 'node:test';
import { planRefunds, type RefundFact, refundedTotal, statusAfterRefunds } from './refund-totals.ts';

const PAYMENT = { id: 'pay_1', amount: 10000 };

function ok(amount: number): RefundFact[] {
  return [{ reference: `re_${amount}`, amount, status: 'succeeded' }];
}

test('amount_refunded is the sum of the succeeded refunds only', () => {
  assert.equal(refundedTotal([]), 0);
  assert.equal(
    refundedTotal([
      { reference: 'a', amount: 4000, status: 'succeeded' },
      { reference: 'b', amount: 3000, status: 'failed' },
      { reference: 'c', amount: 1000, status: 'succeeded' },
    ]),
    5000,
  );
});

test('a refund that fits what remains is accepted; one beyond it is refused with the remainder named', () => {
  const recorded: RefundFact[] = [
    { reference: 're_1', amount: 4000, status: 'succeeded' },
    { reference: 're_2', amount: 4000, status: 'succeeded' },
  ];
  assert.deepEqual(planRefunds(PAYMENT, recorded, ok(2000)), {
    accepted: true,
    changes: [{ action: 'insert', refund: ok(2000)[0] }],
    refunded: 10000,
  });
  assert.deepEqual(planRefunds(PAYMENT, recorded, [{ reference: 're_3', amount: 4000, status: 'succeeded' }]), {
    accepted: false,
    reason: 'refund re_3 of 4000 exceeds the 2000 remaining on payment pay_1',
  });
  assert.deepEqual(planRefunds(PAYMENT, [], ok(999_999_999)), {
    accepted: false,
    reason: 'refund re_999999999 of 999999999 exceeds the 10000 remaining on payment pay_1',
  });
});

test('one event listing several refunds is refused whole when any of them does not fit', () => {
  const reports: RefundFact[] = [
    { reference: 're_a', amount: 6000, status: 'succeeded' },
    { reference: 're_b', amount: 6000, status: 'succeeded' },
  ];
  const plan = planRefunds(PAYMENT, [], reports);
  assert.equal(plan.accepted, false);
});

test('a failure reverses a succeeded refund; failed is final and a repeat changes nothing', () => {
  const recorded: RefundFact[] = [{ reference: 're_1', amount: 4000, status: 'succeeded' }];
  const failure: RefundFact = { reference: 're_1', amount: 4000, status: 'failed' };
  assert.deepEqual(planRefunds(PAYMENT, recorded, [failure]), {
    accepted: true,
    changes: [{ action: 'fail', refund: failure }],
    refunded: 0,
  });
  const failed = [failure];
  assert.deepEqual(planRefunds(PAYMENT, failed, [{ ...failure, status: 'succeeded' }]), {
    accepted: true,
    changes: [],
    refunded: 0,
  });
  assert.deepEqual(planRefunds(PAYMENT, failed, [failure]), { accepted: true, changes: [], refunded: 0 });
  assert.deepEqual(
    planRefunds(
      PAYMENT,
      recorded,
      ok(4000).map((r) => ({ ...r, reference: 're_1' })),
    ),
    {
      accepted: true,
      changes: [],
      refunded: 4000,
    },
  );
});

test('a failure report for an unknown refund records it failed, and it frees nothing it never took', () => {
  const failure: RefundFact = { reference: 're_9', amount: 9000, status: 'failed' };
  const plan = planRefunds(PAYMENT, ok(8000), [failure]);
  assert.deepEqual(plan, { accepted: true, changes: [{ action: 'insert', refund: failure }], refunded: 8000 });
});

test('the same success and failure reports in every order end in the same refunds and total', () => {
  const reports: RefundFact[] = [
    { reference: 're_1', amount: 5000, status: 'succeeded' },
    { reference: 're_1', amount: 5000, status: 'failed' },
    { reference: 're_2', amount: 4000, status: 'succeeded' },
    { reference: 're_3', amount: 1000, status: 'succeeded' },
  ];
  function permutations<T>(items: T[]): T[][] {
    if (items.length <= 1) return [items];
    return items.flatMap((item, i) =>
      permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest]),
    );
  }
  const finals = new Set<string>();
  for (const order of permutations(reports)) {
    const recorded = new Map<string, RefundFact>();
    let refunded = 0;
    for (const report of order) {
      const plan = planRefunds(PAYMENT, [...recorded.values()], [report]);
      assert.ok(plan.accepted);
      for (const change of plan.changes) recorded.set(change.refund.reference, change.refund);
      refunded = plan.refunded;
    }
    const refunds = [...recorded.values()].sort((a, b) => a.reference.localeCompare(b.reference));
    finals.add(JSON.stringify({ refunds, refunded }));
  }
  assert.deepEqual(
    [...finals].map((final) => JSON.parse(final)),
    [
      {
        refunds: [
          { reference: 're_1', amount: 5000, status: 'failed' },
          { reference: 're_2', amount: 4000, status: 'succeeded' },
          { reference: 're_3', amount: 1000, status: 'succeeded' },
        ],
        refunded: 5000,
      },
    ],
  );
});

test('status follows the refunded total, back to succeeded when nothing stays refunded', () => {
  assert.equal(statusAfterRefunds(5000, 0), 'succeeded');
  assert.equal(statusAfterRefunds(5000, 1), 'partially_refunded');
  assert.equal(statusAfterRefunds(5000, 5000), 'refunded');
});
