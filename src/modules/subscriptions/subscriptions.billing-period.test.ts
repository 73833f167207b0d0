import assert from 'node:assert/strict';
import { test } from 'node:test';
import { addInterval, nextPeriodOnAnchor } from './subscriptions.billing-period.ts';

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

test('the period after one ends at the next boundary of the anchor, whatever the time it is computed', () => {
  const anchor = at('2026-01-15T10:00:00.000Z');
  const first = nextPeriodOnAnchor({ anchor, after: anchor, ...monthly });
  assert.deepEqual(first, { start: anchor, end: at('2026-02-15T10:00:00.000Z') });
  const third = nextPeriodOnAnchor({ anchor, after: at('2026-03-15T10:00:00.000Z'), ...monthly });
  assert.deepEqual(third, { start: at('2026-03-15T10:00:00.000Z'), end: at('2026-04-15T10:00:00.000Z') });
});

test('an anchor on the 31st comes back after a short month: Jan 31 → Feb 28 → Mar 31 (Stripe)', () => {
  const anchor = at('2026-01-31T10:00:00.000Z');
  const february = nextPeriodOnAnchor({ anchor, after: anchor, ...monthly });
  assert.deepEqual(february.end, at('2026-02-28T10:00:00.000Z'));
  const march = nextPeriodOnAnchor({ anchor, after: february.end, ...monthly });
  assert.deepEqual(march, { start: at('2026-02-28T10:00:00.000Z'), end: at('2026-03-31T10:00:00.000Z') });
  const april = nextPeriodOnAnchor({ anchor, after: march.end, ...monthly });
  assert.deepEqual(april.end, at('2026-04-30T10:00:00.000Z'));
  // Every three months and every year from a leap day: the boundaries are the anchor's.
  const quarterly = nextPeriodOnAnchor({
    anchor,
    after: at('2026-04-30T10:00:00.000Z'),
    interval: 'month',
    intervalCount: 3,
  });
  assert.deepEqual(quarterly.end, at('2026-07-31T10:00:00.000Z'));
  const leap = at('2028-02-29T00:00:00.000Z');
  const y2029 = nextPeriodOnAnchor({ anchor: leap, after: leap, interval: 'year', intervalCount: 1 });
  assert.deepEqual(y2029.end, at('2029-02-28T00:00:00.000Z'));
  const y2032 = nextPeriodOnAnchor({
    anchor: leap,
    after: at('2031-02-28T00:00:00.000Z'),
    interval: 'year',
    intervalCount: 1,
  });
  assert.deepEqual(y2032.end, at('2032-02-29T00:00:00.000Z'));
});

test('days and weeks count fixed steps from the anchor', () => {
  const anchor = at('2026-01-15T10:00:00.000Z');
  const days = nextPeriodOnAnchor({ anchor, after: at('2026-01-29T10:00:00.000Z'), interval: 'day', intervalCount: 7 });
  assert.deepEqual(days.end, at('2026-02-05T10:00:00.000Z'));
  const weeks = nextPeriodOnAnchor({
    anchor,
    after: at('2026-01-29T10:00:00.000Z'),
    interval: 'week',
    intervalCount: 2,
  });
  assert.deepEqual(weeks.end, at('2026-02-12T10:00:00.000Z'));
});

test('a period that does not end on the anchor (before anchors existed) is followed by one full interval', () => {
  const anchor = at('2026-01-15T10:00:00.000Z');
  // An old subscription whose late payment had moved its period to 10:30.
  const period = nextPeriodOnAnchor({ anchor, after: at('2026-02-15T10:30:00.000Z'), ...monthly });
  assert.deepEqual(period, { start: at('2026-02-15T10:30:00.000Z'), end: at('2026-03-15T10:30:00.000Z') });
  // Before the anchor: the same.
  const before = nextPeriodOnAnchor({ anchor, after: at('2025-12-15T10:00:00.000Z'), ...monthly });
  assert.deepEqual(before.end, at('2026-01-15T10:00:00.000Z'));
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

test('periods near year 9999 end at the last storable instant, and the one after it is empty', () => {
  const anchor = at('2026-01-01T00:00:00.000Z');
  const last = nextPeriodOnAnchor({
    anchor,
    after: at('9997-01-01T00:00:00.000Z'),
    interval: 'year',
    intervalCount: 3,
  });
  assert.deepEqual(last.end, at('9999-12-31T23:59:59.999Z'));
  const after = nextPeriodOnAnchor({ anchor, after: last.end, interval: 'year', intervalCount: 3 });
  assert.deepEqual(after, { start: last.end, end: last.end }, 'already at the end of time: nothing left');
});
