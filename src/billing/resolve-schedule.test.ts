import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_RESOLVE_DELAY_MS, RESOLVE_DELAY_MS, RESOLVE_WINDOW_MS, resolveDelayMs } from './resolve-schedule.ts';

const MINUTE = 60_000;

test('an unknown charge is asked about again after 1 min, then as long as it has waited, at most hourly', () => {
  assert.equal(resolveDelayMs(0), RESOLVE_DELAY_MS);
  assert.equal(resolveDelayMs(-5), RESOLVE_DELAY_MS, 'a clock set back never asks sooner');
  assert.equal(resolveDelayMs(MINUTE), MINUTE);
  assert.equal(resolveDelayMs(4 * MINUTE), 4 * MINUTE);
  assert.equal(resolveDelayMs(64 * MINUTE), MAX_RESOLVE_DELAY_MS);
  assert.equal(resolveDelayMs(RESOLVE_WINDOW_MS - 1), MAX_RESOLVE_DELAY_MS);
});

test('after a day of no usable answer the worker stops asking; a day holds a bounded number of asks', () => {
  assert.equal(resolveDelayMs(RESOLVE_WINDOW_MS), null);
  let asks = 1; // the charge itself, at age 0
  for (let age = 0, delay = resolveDelayMs(age); delay !== null; delay = resolveDelayMs(age)) {
    age += delay;
    asks += 1;
  }
  assert.equal(asks, 31, 'the charge and 30 asks');
});
