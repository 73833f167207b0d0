import assert from 'node:assert/strict';
import { test } from 'node:test';
import { addClamped, clampTime, isStorableTime, MAX_TIMESTAMP, MAX_TIMESTAMP_MS, MIN_TIMESTAMP } from './timestamps.ts';

test('storable instants run from 1970-01-01 to the last millisecond of year 9999', () => {
  assert.equal(MAX_TIMESTAMP, '9999-12-31T23:59:59.999Z');
  assert.equal(new Date(MAX_TIMESTAMP_MS).toISOString(), MAX_TIMESTAMP, 'still a four-digit year');
  assert.ok(isStorableTime(Date.parse(MIN_TIMESTAMP)));
  assert.ok(isStorableTime(MAX_TIMESTAMP_MS));
  assert.ok(!isStorableTime(MAX_TIMESTAMP_MS + 1));
  assert.ok(!isStorableTime(Date.parse(MIN_TIMESTAMP) - 1));
  assert.ok(!isStorableTime(Number.NaN));
});

test('a deadline computed past year 9999 is clamped to MAX_TIMESTAMP, even beyond the Date range', () => {
  const now = new Date('2026-01-15T10:00:00.000Z');
  assert.equal(addClamped(now, 1000).toISOString(), '2026-01-15T10:00:01.000Z');
  assert.equal(addClamped(new Date(MAX_TIMESTAMP_MS - 500), 1000).toISOString(), MAX_TIMESTAMP);
  assert.equal(addClamped(now, 1e17).toISOString(), MAX_TIMESTAMP, 'past JavaScript’s own range');
  assert.equal(clampTime(Number.NaN).toISOString(), MAX_TIMESTAMP, 'an overflowed computation reads as too late');
  assert.equal(clampTime(-1e17).toISOString(), MIN_TIMESTAMP);
});
