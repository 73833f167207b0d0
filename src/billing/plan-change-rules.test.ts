// The proration formula and the change rules of SPEC §13, without a database: Stripe's
// worked cases to the minor unit, the defaults, and every refusal.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AmountOutOfRangeError } from './compose/errors.ts';
import { composeInvoice } from './compose/pipeline.ts';
import { periodInvoiceInput } from './compose/input.ts';
import { prorationLines } from './compose/proration.ts';
import { CANNOT_CHANGE, type ChangeFacts, type ChangePlan, decideChange } from './plan-change-rules.ts';
import { StateConflictError, ValidationError } from '../http/errors.ts';

const plan = (id: string, amount: number, more: Partial<ChangePlan> = {}): ChangePlan => ({
  id,
  name: id,
  amount,
  currency: 'USD',
  interval: 'month',
  interval_count: 1,
  active: true,
  ...more,
});
const BASIC = plan('Basic', 1000);
const PRO = plan('Pro', 2000);
const YEARLY = plan('Yearly', 10000, { interval: 'year' });
// A 30-day period: mid-period is 16 Apr 00:00, a third left is 21 Apr 00:00.
const START = '2026-04-01T00:00:00.000Z';
const END = '2026-05-01T00:00:00.000Z';

function facts(more: Partial<ChangeFacts> = {}): ChangeFacts {
  return {
    status: 'active',
    period_start: START,
    period_end: END,
    from: { plan: BASIC, quantity: 1 },
    to: { plan: PRO, quantity: 1 },
    request: {},
    now: new Date('2026-04-16T00:00:00.000Z'),
    ...more,
  };
}

const amounts = (lines: readonly { amount: number }[]) => lines.map((line) => line.amount);

test('$10 → $20 at mid-period: −$5 for the unused time and +$10 for the remaining time, invoiced now', () => {
  const decision = decideChange(facts());
  assert.equal(decision.kind, 'same_period');
  if (decision.kind !== 'same_period') return;
  assert.equal(decision.behavior, 'always_invoice');
  assert.equal(decision.proration_date, '2026-04-16T00:00:00.000Z');
  assert.deepEqual(amounts(decision.lines), [-500, 1000]);
  assert.deepEqual(
    decision.lines.map((line) => [
      line.kind,
      line.description,
      line.quantity,
      line.period_start,
      line.period_end,
      line.proration,
    ]),
    [
      ['proration', 'Unused time on Basic × 1 after 16 Apr 2026', 1, '2026-04-16T00:00:00.000Z', END, true],
      ['proration', 'Remaining time on Pro × 1 after 16 Apr 2026', 1, '2026-04-16T00:00:00.000Z', END, true],
    ],
  );
});

test('3 → 5 seats with a third of the period left: −round(3 × $10 / 3) and +round(5 × $10 / 3), rounded once each', () => {
  const decision = decideChange(
    facts({
      from: { plan: BASIC, quantity: 3 },
      to: { plan: BASIC, quantity: 5 },
      now: new Date('2026-04-21T00:00:00Z'),
    }),
  );
  assert.equal(decision.kind, 'same_period');
  if (decision.kind !== 'same_period') return;
  // 5000 / 3 = 1666.67 → 1667; the credit 3000 / 3 = 1000 exactly.
  assert.deepEqual(amounts(decision.lines), [-1000, 1667]);
  assert.match(decision.lines[1]!.description, /^Remaining time on Basic × 5 after 21 Apr 2026$/);
});

test('month → year applies now: the anchor and a new yearly period start at the change, the unused month is credited', () => {
  const decision = decideChange(facts({ to: { plan: YEARLY, quantity: 1 } }));
  assert.equal(decision.kind, 'new_period');
  if (decision.kind !== 'new_period') return;
  assert.equal(decision.proration_date, '2026-04-16T00:00:00.000Z');
  assert.deepEqual(decision.period, { start: new Date('2026-04-16T00:00:00Z'), end: new Date('2027-04-16T00:00:00Z') });
  assert.deepEqual(amounts(decision.lines), [-500]);
  // The invoice of the new period: the year in full, less the month's unused half.
  const invoice = composeInvoice(
    periodInvoiceInput({
      reason: 'subscription_update',
      customerId: 'cus_1',
      subscriptionId: 'sub_1',
      plan: YEARLY,
      periodStart: '2026-04-16T00:00:00.000Z',
      periodEnd: '2027-04-16T00:00:00.000Z',
      pendingItems: decision.lines,
    }),
  );
  assert.deepEqual(amounts(invoice.lines), [10000, -500]);
  assert.equal(invoice.total, 9500);
  // Back to monthly from a yearly period: its unused half is credited (a negative invoice total: credit).
  const back = decideChange(facts({ from: { plan: YEARLY, quantity: 1 }, to: { plan: BASIC, quantity: 1 } }));
  assert.equal(back.kind, 'new_period');
  if (back.kind === 'new_period') assert.deepEqual(amounts(back.lines), [-5000]);
});

test('a downgrade is scheduled for the period end with no proration; made immediate it defaults to create_prorations', () => {
  assert.deepEqual(decideChange(facts({ from: { plan: PRO, quantity: 1 }, to: { plan: BASIC, quantity: 1 } })), {
    kind: 'scheduled',
    effective_at: END,
  });
  assert.deepEqual(decideChange(facts({ from: { plan: BASIC, quantity: 4 }, to: { plan: BASIC, quantity: 2 } })), {
    kind: 'scheduled',
    effective_at: END,
  });
  const now = decideChange(
    facts({
      from: { plan: PRO, quantity: 1 },
      to: { plan: BASIC, quantity: 1 },
      request: { effective: 'immediately' },
    }),
  );
  assert.equal(now.kind, 'same_period');
  if (now.kind === 'same_period') {
    assert.equal(now.behavior, 'create_prorations');
    assert.deepEqual(amounts(now.lines), [-1000, 500]);
  }
  // An upgrade asked for the period end is scheduled too.
  assert.deepEqual(decideChange(facts({ request: { effective: 'period_end' } })), {
    kind: 'scheduled',
    effective_at: END,
  });
});

test('in a trial the plan is swapped with no lines, whatever the prices and intervals', () => {
  for (const to of [PRO, BASIC, YEARLY]) {
    assert.deepEqual(
      decideChange(
        facts({ status: 'trialing', from: { plan: plan('Mid', 1500), quantity: 1 }, to: { plan: to, quantity: 2 } }),
      ),
      { kind: 'trial_swap' },
    );
  }
});

test('proration_behavior none has no lines; proration_date is to the second and defaults to now, not before the period', () => {
  const none = decideChange(facts({ request: { proration_behavior: 'none' } }));
  assert.ok(none.kind === 'same_period' && none.lines.length === 0 && none.behavior === 'none');
  const late = decideChange(facts({ now: new Date('2026-04-16T00:00:00.999Z') }));
  assert.ok(late.kind === 'same_period' && late.proration_date === '2026-04-16T00:00:00.000Z');
  const early = decideChange(
    facts({ period_start: '2026-04-01T00:00:00.400Z', now: new Date('2026-04-01T00:00:00.700Z') }),
  );
  assert.ok(early.kind === 'same_period' && early.proration_date === '2026-04-01T00:00:00.400Z');
  // A given proration_date is used as it is: the preview's answer fed back to the change.
  const given = decideChange(facts({ request: { proration_date: '2026-04-11T00:00:00.000Z' } }));
  assert.ok(given.kind === 'same_period');
  assert.deepEqual(amounts(given.lines), [-667, 1333]);
});

test('each proration line rounds half away from zero, once, from the exact fraction', () => {
  // 1 × 1 minor unit over half the period: ±0.5 → ±1.
  const lines = prorationLines({
    from: { plan: { ...BASIC, amount: 1 }, quantity: 1 },
    to: { plan: { ...PRO, amount: 1 }, quantity: 1 },
    period_start: START,
    period_end: END,
    proration_date: '2026-04-16T00:00:00.000Z',
  });
  assert.deepEqual(amounts(lines), [-1, 1]);
});

test('refusals: state 409 with the exact text, archived plan, other currency, no change, bad dates and overflow 400', () => {
  for (const status of ['past_due', 'unpaid', 'paused', 'cancelled', 'incomplete', 'incomplete_expired'] as const) {
    assert.throws(
      () => decideChange(facts({ status })),
      (error: unknown) =>
        error instanceof StateConflictError && error.message === CANNOT_CHANGE && error.status === 409,
    );
  }
  const refused = (more: Partial<ChangeFacts>, pattern: RegExp) =>
    assert.throws(
      () => decideChange(facts(more)),
      (error: unknown) => error instanceof ValidationError && pattern.test(error.message),
    );
  refused({ to: { plan: { ...PRO, active: false }, quantity: 1 } }, /archived/);
  refused({ to: { plan: { ...PRO, currency: 'EUR' }, quantity: 1 } }, /keeps the currency/);
  refused({ to: { plan: BASIC, quantity: 1 } }, /no new plan or quantity/);
  refused({ request: { proration_date: END } }, /inside the current period/);
  refused({ request: { proration_date: '2026-03-31T23:59:59.000Z' } }, /inside the current period/);
  refused({ request: { effective: 'period_end', proration_behavior: 'none' } }, /not prorated/);
  refused({ to: { plan: YEARLY, quantity: 1 }, request: { proration_date: START } }, /later proration_date/);
  // 2^40 × 10^6 minor units a period is beyond 2^53 − 1: refused, never rounded.
  assert.throws(
    () => decideChange(facts({ to: { plan: plan('Huge', 2 ** 40), quantity: 1_000_000 } })),
    AmountOutOfRangeError,
  );
  assert.equal(decideChange(facts({ to: { plan: PRO, quantity: 1_000_000 } })).kind, 'same_period');
});
