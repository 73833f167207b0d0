import assert from 'node:assert/strict';
import { test } from 'node:test';
import { nextRetryDelay, parseRetryAfter } from './webhooks.retry-schedule.ts';

const SCHEDULE = [5_000, 300_000, 1_800_000];

test('each failed attempt waits its scheduled delay; after the last one the delivery fails', () => {
  const middle = () => 0.5; // no jitter
  assert.equal(nextRetryDelay(1, SCHEDULE, undefined, middle), 5_000);
  assert.equal(nextRetryDelay(2, SCHEDULE, undefined, middle), 300_000);
  assert.equal(nextRetryDelay(3, SCHEDULE, undefined, middle), 1_800_000);
  assert.equal(nextRetryDelay(4, SCHEDULE, undefined, middle), undefined);
});

test('jitter stays within ±10% of the scheduled delay', () => {
  assert.equal(
    nextRetryDelay(2, SCHEDULE, undefined, () => 0),
    270_000,
  );
  assert.equal(
    nextRetryDelay(2, SCHEDULE, undefined, () => 0.999_999_9),
    330_000,
  );
  for (let i = 0; i < 1000; i++) {
    const delay = nextRetryDelay(1, SCHEDULE, undefined)!;
    assert.ok(delay >= 4_500 && delay <= 5_500, String(delay));
  }
});

test('a longer Retry-After wins, capped at the longest scheduled delay; a shorter one does not', () => {
  const middle = () => 0.5;
  assert.equal(nextRetryDelay(1, SCHEDULE, 60_000, middle), 60_000);
  assert.equal(nextRetryDelay(1, SCHEDULE, 1_000, middle), 5_000);
  assert.equal(nextRetryDelay(1, SCHEDULE, 86_400_000, middle), 1_800_000);
  assert.equal(nextRetryDelay(4, SCHEDULE, 60_000, middle), undefined);
});

test('Retry-After is read as seconds or an HTTP date', () => {
  const now = new Date('2026-01-15T10:00:00.000Z');
  assert.equal(parseRetryAfter('120', now), 120_000);
  assert.equal(parseRetryAfter(' 0 ', now), 0);
  assert.equal(parseRetryAfter('Thu, 15 Jan 2026 10:02:00 GMT', now), 120_000);
  assert.equal(parseRetryAfter('Thu, 15 Jan 2026 09:00:00 GMT', now), undefined);
  assert.equal(parseRetryAfter('soon', now), undefined);
  assert.equal(parseRetryAfter('-5', now), undefined);
  assert.equal(parseRetryAfter('2026', now), 2_026_000);
  assert.equal(parseRetryAfter(undefined, now), undefined);
});
