import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_ATTEMPTS, retryDelayMs } from './inbox.retry-backoff.ts';

test('retries back off exponentially from 30 s, capped at 6 h', () => {
  assert.equal(retryDelayMs(1), 30_000);
  assert.equal(retryDelayMs(2), 60_000);
  assert.equal(retryDelayMs(3), 120_000);
  assert.equal(retryDelayMs(10), 30_000 * 2 ** 9);
  assert.equal(retryDelayMs(11), 6 * 3600_000);
  assert.equal(retryDelayMs(MAX_ATTEMPTS - 1), 6 * 3600_000);
});

test('after the last attempt there is no next one', () => {
  assert.equal(retryDelayMs(MAX_ATTEMPTS), null);
  assert.equal(retryDelayMs(MAX_ATTEMPTS + 5), null);
});
