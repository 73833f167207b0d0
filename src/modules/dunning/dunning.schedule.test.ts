import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isFinalActionNext, nextActionAt } from './dunning.schedule.ts';

const DAY = 86_400_000;
const opened = new Date('2026-03-01T12:00:00.000Z');
const at = (days: number) => new Date(opened.getTime() + days * DAY);

test('each step is due its delay after the opening; the final action one more gap after the last', () => {
  const schedule = [1, 3, 7, 14].map((d) => d * DAY);
  assert.deepEqual(
    [0, 1, 2, 3, 4].map((taken) => nextActionAt(opened, taken, schedule)),
    [at(1), at(3), at(7), at(14), at(21)],
  );
  assert.deepEqual(
    [0, 3, 4].map((taken) => isFinalActionNext(taken, schedule)),
    [false, false, true],
  );
});

test('a one-step schedule waits that step again before the final action', () => {
  assert.deepEqual(nextActionAt(opened, 1, [3 * DAY]), at(6));
});

test('steps outside the schedule are refused', () => {
  assert.throws(() => nextActionAt(opened, 5, [DAY, 2 * DAY]), RangeError);
  assert.throws(() => nextActionAt(opened, -1, [DAY]), RangeError);
});
