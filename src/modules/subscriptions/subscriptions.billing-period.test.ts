import assert from 'node:assert/strict';
import { test } from 'node:test';
import { addInterval, periodAfterPayment } from './subscriptions.billing-period.ts';

const at = (iso: string) => new Date(iso);
const iso = (date: Date) => date.toISOString();

test('addInterval adds days and weeks as fixed 24 h steps in UTC', () => {
  assert.equal(iso(addInterval(at('2026-01-15T10:00:00.000Z'), 'day', 1)), '2026-01-16T10:00:00.000Z');
  assert.equal(iso(addInterval(at('2026-01-15T10:00:00.000Z'), 'day', 30)), '2026-02-14T10:00:00.000Z');
  assert.equal(iso(addInterval(at('2026-01-15T10:00:00.000Z'), 'week', 1)), '2026-01-22T10:00:00.000Z');
  assert.equal(iso(addInterval(at('2026-12-29T23:59:59.999Z'), 'week', 2)), '2027-01-12T23:59:59.999Z');
});

test('addInterval keeps the day of month and the time of day for months and years', () => {
  assert.equal(iso(addInterval(at('2026-01-15T10:00:00.000Z'), 'month', 1)), '2026-02-15T10:00:00.000Z');
  assert.equal(iso(addInterval(at('2026-01-15T10:00:00.000Z'), 'month', 3)), '2026-04-15T10:00:00.000Z');
  assert.equal(iso(addInterval(at('2026-11-30T08:30:00.000Z'), 'month', 2)), '2027-01-30T08:30:00.000Z');
  assert.equal(iso(addInterval(at('2026-01-15T10:00:00.000Z'), 'year', 1)), '2027-01-15T10:00:00.000Z');
  assert.equal(iso(addInterval(at('2026-01-15T10:00:00.000Z'), 'year', 2)), '2028-01-15T10:00:00.000Z');
});

test('addInterval clamps to the last day of a shorter month: Jan 31 + 1 month is Feb 28', () => {
  assert.equal(iso(addInterval(at('2026-01-31T10:00:00.000Z'), 'month', 1)), '2026-02-28T10:00:00.000Z');
  assert.equal(iso(addInterval(at('2026-03-31T10:00:00.000Z'), 'month', 1)), '2026-04-30T10:00:00.000Z');
  assert.equal(iso(addInterval(at('2026-08-31T00:00:00.000Z'), 'month', 1)), '2026-09-30T00:00:00.000Z');
  assert.equal(iso(addInterval(at('2026-01-30T10:00:00.000Z'), 'month', 1)), '2026-02-28T10:00:00.000Z');
});

test('addInterval clamps to Feb 29 in a leap year, and a year from Feb 29 to Feb 28', () => {
  assert.equal(iso(addInterval(at('2028-01-31T10:00:00.000Z'), 'month', 1)), '2028-02-29T10:00:00.000Z');
  assert.equal(iso(addInterval(at('2028-02-29T10:00:00.000Z'), 'year', 1)), '2029-02-28T10:00:00.000Z');
  assert.equal(iso(addInterval(at('2028-02-29T10:00:00.000Z'), 'year', 4)), '2032-02-29T10:00:00.000Z');
  assert.equal(iso(addInterval(at('2027-12-31T10:00:00.000Z'), 'month', 2)), '2028-02-29T10:00:00.000Z');
});

test('addInterval does not overflow into the next month when the target is shorter', () => {
  // Naive setUTCMonth(+1) from Jan 31 gives Mar 3; the clamp must prevent that.
  const result = addInterval(at('2026-01-31T00:00:00.000Z'), 'month', 1);
  assert.equal(result.getUTCMonth(), 1);
});

const monthly = { interval: 'month' as const, intervalCount: 1 };

test('a payment for a subscription that is not active starts a period now when it has no period', () => {
  const now = at('2026-01-15T10:00:00.000Z');
  const period = periodAfterPayment({
    active: false,
    now,
    currentPeriodStart: null,
    currentPeriodEnd: null,
    ...monthly,
  });
  assert.deepEqual(period, { start: now, end: at('2026-02-15T10:00:00.000Z') });
});

test('a payment for a subscription that is not active starts at max(now, current_period_end)', () => {
  // A trial still running: the paid period starts when the trial ends.
  const running = periodAfterPayment({
    active: false,
    now: at('2026-01-15T10:00:00.000Z'),
    currentPeriodStart: at('2026-01-10T10:00:00.000Z'),
    currentPeriodEnd: at('2026-01-24T10:00:00.000Z'),
    ...monthly,
  });
  assert.deepEqual(running, { start: at('2026-01-24T10:00:00.000Z'), end: at('2026-02-24T10:00:00.000Z') });
  // A past_due subscription whose period ended: the new period starts now.
  const ended = periodAfterPayment({
    active: false,
    now: at('2026-03-05T12:00:00.000Z'),
    currentPeriodStart: at('2026-01-15T10:00:00.000Z'),
    currentPeriodEnd: at('2026-02-15T10:00:00.000Z'),
    ...monthly,
  });
  assert.deepEqual(ended, { start: at('2026-03-05T12:00:00.000Z'), end: at('2026-04-05T12:00:00.000Z') });
});

test('an early payment while active extends current_period_end by one interval, keeping the start', () => {
  const period = periodAfterPayment({
    active: true,
    now: at('2026-02-10T10:00:00.000Z'),
    currentPeriodStart: at('2026-01-15T10:00:00.000Z'),
    currentPeriodEnd: at('2026-02-15T10:00:00.000Z'),
    interval: 'week',
    intervalCount: 2,
  });
  assert.deepEqual(period, { start: at('2026-01-15T10:00:00.000Z'), end: at('2026-03-01T10:00:00.000Z') });
});

test('a payment while active after the period ended starts a new period now', () => {
  const now = at('2026-02-15T10:30:00.000Z');
  const period = periodAfterPayment({
    active: true,
    now,
    currentPeriodStart: at('2026-01-15T10:00:00.000Z'),
    currentPeriodEnd: at('2026-02-15T10:00:00.000Z'),
    ...monthly,
  });
  assert.deepEqual(period, { start: now, end: at('2026-03-15T10:30:00.000Z') });
});

test('a payment exactly at current_period_end starts the next period at that instant', () => {
  const end = at('2026-02-15T10:00:00.000Z');
  for (const active of [true, false]) {
    const period = periodAfterPayment({
      active,
      now: end,
      currentPeriodStart: at('2026-01-15T10:00:00.000Z'),
      currentPeriodEnd: end,
      ...monthly,
    });
    assert.deepEqual(period, { start: end, end: at('2026-03-15T10:00:00.000Z') }, `active=${active}`);
  }
});

test('periodAfterPayment uses the plan interval and count', () => {
  const now = at('2026-01-31T00:00:00.000Z');
  const base = { active: false, now, currentPeriodStart: null, currentPeriodEnd: null };
  assert.equal(iso(periodAfterPayment({ ...base, interval: 'day', intervalCount: 7 }).end), '2026-02-07T00:00:00.000Z');
  assert.equal(
    iso(periodAfterPayment({ ...base, interval: 'month', intervalCount: 1 }).end),
    '2026-02-28T00:00:00.000Z',
  );
  assert.equal(
    iso(periodAfterPayment({ ...base, interval: 'month', intervalCount: 3 }).end),
    '2026-04-30T00:00:00.000Z',
  );
  assert.equal(
    iso(periodAfterPayment({ ...base, interval: 'year', intervalCount: 1 }).end),
    '2027-01-31T00:00:00.000Z',
  );
});

test('a period end past year 9999 is clamped to 9999-12-31T23:59:59.999Z, never stored as +010000-…', () => {
  const max = '9999-12-31T23:59:59.999Z';
  assert.equal(iso(addInterval(at('9999-06-15T10:00:00.000Z'), 'year', 3)), max);
  assert.equal(iso(addInterval(at('9999-12-01T00:00:00.000Z'), 'month', 1)), max);
  assert.equal(iso(addInterval(at('9999-12-31T00:00:00.000Z'), 'week', 1)), max);
  assert.equal(iso(addInterval(at('9999-12-31T00:00:00.000Z'), 'day', 1)), max);
  // Beyond what a Date can hold (old plans with huge counts): still the last instant, not a RangeError.
  assert.equal(iso(addInterval(at('2026-01-15T10:00:00.000Z'), 'day', 1e9)), max);
  assert.equal(iso(addInterval(at('2026-01-15T10:00:00.000Z'), 'year', 1e6)), max);
  // The last instant itself is kept.
  assert.equal(iso(addInterval(at('9998-12-31T23:59:59.999Z'), 'year', 1)), max);
});

test('an early payment near year 9999 extends current_period_end only up to the last storable instant', () => {
  const period = periodAfterPayment({
    active: true,
    now: at('2026-01-15T10:00:00.000Z'),
    currentPeriodStart: at('2026-01-01T00:00:00.000Z'),
    currentPeriodEnd: at('9998-03-01T00:00:00.000Z'),
    interval: 'year',
    intervalCount: 3,
  });
  assert.deepEqual(period, { start: at('2026-01-01T00:00:00.000Z'), end: at('9999-12-31T23:59:59.999Z') });
  const again = periodAfterPayment({
    active: true,
    now: at('2026-01-15T10:00:00.000Z'),
    currentPeriodStart: period.start,
    currentPeriodEnd: period.end,
    interval: 'year',
    intervalCount: 3,
  });
  assert.deepEqual(again, period, 'already at the end of time: nothing left to extend');
});
