import assert from 'node:assert/strict';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { test } from 'node:test';
import { ManualClock } from './clock.ts';
import { type ClockReads, noticeClockReads, noticesClockReads, watchClockReads } from './clock-reads.ts';

test('a clock read is noted in the record of the work that made it, across awaits, and nowhere else', async () => {
  const manual = new ManualClock(new Date('2026-01-01T00:00:00Z'));
  const clock = noticeClockReads(manual);
  assert.equal(noticeClockReads(clock), clock, 'wrapping twice changes nothing');
  assert.ok(noticesClockReads(clock));
  assert.ok(!noticesClockReads(manual));
  const reader: ClockReads = { clockRead: false };
  const bystander: ClockReads = { clockRead: false };
  clock.now(); // outside any watched work: noted nowhere
  await Promise.all([
    watchClockReads(reader, async () => {
      await nextTurn();
      assert.equal(clock.now().toISOString(), '2026-01-01T00:00:00.000Z', 'same answers as the clock');
    }),
    watchClockReads(bystander, async () => {
      await nextTurn();
      await nextTurn();
    }),
  ]);
  clock.now();
  assert.equal(reader.clockRead, true);
  assert.equal(bystander.clockRead, false, 'another work’s read, before, beside and after, is not its own');
});
