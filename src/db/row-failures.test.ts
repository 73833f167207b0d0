// The wait before a failed worker row is tried again (db/row-failures.ts), pure.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ROW_RETRY_BASE_MS, ROW_RETRY_MAX_MS, rowRetryDelayMs } from './row-failures.ts';

test('a failed row waits 5 minutes, doubling with each failure in a row, at most a day', () => {
  assert.equal(rowRetryDelayMs(1), ROW_RETRY_BASE_MS);
  assert.equal(rowRetryDelayMs(2), 2 * ROW_RETRY_BASE_MS);
  assert.equal(rowRetryDelayMs(3), 4 * ROW_RETRY_BASE_MS);
  assert.equal(rowRetryDelayMs(9), 256 * ROW_RETRY_BASE_MS);
  assert.equal(rowRetryDelayMs(10), ROW_RETRY_MAX_MS, '512 × 5 min is past a day');
  assert.equal(rowRetryDelayMs(1_000), ROW_RETRY_MAX_MS);
  assert.equal(ROW_RETRY_MAX_MS, 24 * 60 * 60_000);
});
