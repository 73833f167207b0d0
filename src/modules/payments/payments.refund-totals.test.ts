import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  pendingTotal,
  planRefunds,
  type RecordedRefund,
  refundableAmount,
  type RefundFact,
  refundedTotal,
  statusAfterRefunds,
} from './payments.refund-totals.ts';

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

// ---- Refunds requested through the API (SPEC §10): pending until a report settles them ----

test('what a request may still ask for counts pending refunds; a failed one frees its amount', () => {
  assert.equal(refundableAmount(10000, []), 10000);
  assert.equal(
    refundableAmount(10000, [
      { reference: 'a', amount: 3000, status: 'succeeded' },
      { reference: 'b', amount: 4000, status: 'pending' },
      { reference: 'c', amount: 2500, status: 'failed' },
    ]),
    3000,
  );
  assert.equal(refundableAmount(10000, [{ reference: 'a', amount: 10000, status: 'pending' }]), 0);
});

test('a report settles the pending refund it names — by reference, by our id in requestReference, or (matchByAmount) the oldest pending of its amount — never a second refund', () => {
  const pending: RecordedRefund[] = [
    { reference: 're_ours1', amount: 3000, status: 'pending', requestId: 're_ours1' },
    { reference: '3018284', amount: 3000, status: 'pending', requestId: 're_ours2' },
  ];
  const byReference = planRefunds(PAYMENT, pending, [{ reference: '3018284', amount: 3000, status: 'succeeded' }]);
  assert.deepEqual(byReference, {
    accepted: true,
    changes: [
      { action: 'settle', refund: pending[1], report: { reference: '3018284', amount: 3000, status: 'succeeded' } },
    ],
    refunded: 3000,
  });
  const named = { reference: 're_Stripe9', amount: 3000, status: 'succeeded' as const, requestReference: 're_ours2' };
  assert.deepEqual(planRefunds(PAYMENT, pending, [named]), {
    accepted: true,
    changes: [{ action: 'settle', refund: pending[1], report: named }],
    refunded: 3000,
  });
  const loose = { reference: '1300000001', amount: 3000, status: 'failed' as const, matchByAmount: true };
  const plan = planRefunds(PAYMENT, pending, [loose, { ...loose, reference: '1300000002', status: 'succeeded' }]);
  assert.ok(plan.accepted);
  assert.deepEqual(
    plan.changes.map((c) => (c.action === 'settle' ? [c.refund.requestId, c.report.status] : c.action)),
    [
      ['re_ours1', 'failed'],
      ['re_ours2', 'succeeded'],
    ],
    'oldest first, each pending refund settled once',
  );
  // Neither named nor of a pending amount: the provider's own refund, inserted.
  const other = planRefunds(PAYMENT, pending, [
    { reference: 're_x', amount: 1000, status: 'succeeded', matchByAmount: true },
  ]);
  assert.ok(other.accepted && other.changes[0]!.action === 'insert');
});

test("a provider's report is not refused for our pending requests, but settling one never takes the succeeded sum above the amount", () => {
  const recorded: RecordedRefund[] = [
    { reference: 're_ours1', amount: 6000, status: 'pending', requestId: 're_ours1' },
    { reference: 're_p', amount: 4000, status: 'pending', requestId: 're_p' },
  ];
  const dashboard = planRefunds(PAYMENT, recorded, [{ reference: 're_dash', amount: 5000, status: 'succeeded' }]);
  assert.ok(dashboard.accepted, 'the provider refunded it: a fact (its own cap holds), whatever we asked');
  const after: RecordedRefund[] = [...recorded, { reference: 're_dash', amount: 5000, status: 'succeeded' }];
  assert.deepEqual(planRefunds(PAYMENT, after, [{ reference: 're_ours1', amount: 6000, status: 'succeeded' }]), {
    accepted: false,
    reason: 'refund re_ours1 of 6000 exceeds the 5000 remaining on payment pay_1',
  });
});

test('property: requests accepted against amount − succeeded − pending and the provider reports of them keep succeeded ≤ amount, succeeded + pending ≤ amount, one row per request', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 10000 }),
      // Stripe's events carry our id back (metadata); Paystack's are matched by amount.
      fc.constantFrom('stripe' as const, 'paystack' as const),
      fc.array(
        fc.oneof(
          fc.record({
            kind: fc.constant('request' as const),
            amount: fc.integer({ min: 1, max: 6000 }),
            // Whether the create call's answer (the provider's id) was recorded before any event.
            answered: fc.boolean(),
          }),
          fc.record({
            kind: fc.constant('report' as const),
            pick: fc.nat(),
            status: fc.constantFrom('succeeded' as const, 'failed' as const),
          }),
        ),
        { maxLength: 30 },
      ),
      (amount, provider, steps) => {
        const payment = { id: 'pay_p', amount };
        let rows: RecordedRefund[] = [];
        const requested: { id: string; amount: number }[] = [];
        for (const step of steps) {
          if (step.kind === 'request') {
            if (step.amount > refundableAmount(amount, rows)) continue;
            const id = `re_ours${requested.length + 1}`;
            requested.push({ id, amount: step.amount });
            rows.push({
              reference: step.answered ? `ev_${id}` : id,
              amount: step.amount,
              status: 'pending',
              requestId: id,
            });
          } else {
            if (requested.length === 0) continue;
            const target = requested[step.pick % requested.length]!;
            // The provider names one refund the same way in every event about it.
            const report = {
              reference: `ev_${target.id}`,
              amount: target.amount,
              status: step.status,
              ...(provider === 'stripe' ? { requestReference: target.id } : { matchByAmount: true }),
            };
            const plan = planRefunds(payment, rows, [report]);
            assert.ok(plan.accepted, 'a report of our own request always fits');
            for (const change of plan.changes) {
              if (change.action === 'insert') rows.push(change.refund);
              else if (change.action === 'settle') {
                rows = rows.map((r) =>
                  r.reference === change.refund.reference
                    ? { ...r, reference: change.report.reference, status: change.report.status }
                    : r,
                );
              } else {
                rows = rows.map((r) => (r.reference === change.refund.reference ? { ...r, status: 'failed' } : r));
              }
            }
          }
          assert.ok(refundedTotal(rows) + pendingTotal(rows) <= amount, 'succeeded + pending ≤ amount');
          assert.equal(new Set(rows.map((r) => r.reference)).size, rows.length, 'one row per reference');
          assert.equal(rows.length, requested.length, 'one row per request: reports settle, never add');
        }
      },
    ),
  );
});
