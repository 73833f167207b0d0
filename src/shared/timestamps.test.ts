import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  addClamped,
  clampTime,
  isStorableTime,
  MAX_TIMESTAMP,
  MAX_TIMESTAMP_MS,
  MIN_TIMESTAMP,
  parseTimestamp,
} from './timestamps.ts';

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

test('parseTimestamp reads RFC 3339 date-times field by field, years below 100 included', () => {
  assert.equal(parseTimestamp('1970-01-01T00:00:00Z'), 0);
  assert.equal(parseTimestamp('1970-01-01t01:00:00+01:00'), 0);
  assert.equal(new Date(parseTimestamp('0001-01-01T00:00:00.5z')).toISOString(), '0001-01-01T00:00:00.500Z');
  assert.equal(new Date(parseTimestamp('0099-12-31T23:59:59.999999Z')).toISOString(), '0099-12-31T23:59:59.999Z');
  assert.equal(parseTimestamp('2024-02-29T12:00:00-00:30'), Date.UTC(2024, 1, 29, 12, 30));
  for (const text of [
    '2023-02-29T00:00:00Z',
    '2026-06-30T23:59:60Z',
    '2026-01-01T24:00:00Z',
    '2026-01-01T00:00:00+24:00',
    '2026-01-01T00:00:00+05',
    '2026-01-01T00:00:00+0530',
    '2026-01-01T00:00:00',
    '2026-01-01 00:00:00Z',
    '+010000-01-01T00:00:00Z',
    '2026-01-01',
  ]) {
    assert.ok(Number.isNaN(parseTimestamp(text)), text);
  }
});
