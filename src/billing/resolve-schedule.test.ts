import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  DAILY_RESOLVE_DELAY_MS,
  MAX_RESOLVE_DELAY_MS,
  RESOLVE_DELAY_MS,
  RESOLVE_WINDOW_MS,
  resolveDelayMs,
} from './resolve-schedule.ts';

const MINUTE = 60_000;

test('an unknown charge is asked about again after 1 min, then as long as it has waited, at most hourly', () => {
  assert.equal(resolveDelayMs(0), RESOLVE_DELAY_MS);
  assert.equal(resolveDelayMs(-5), RESOLVE_DELAY_MS, 'a clock set back never asks sooner');
  assert.equal(resolveDelayMs(MINUTE), MINUTE);
  assert.equal(resolveDelayMs(4 * MINUTE), 4 * MINUTE);
  assert.equal(resolveDelayMs(64 * MINUTE), MAX_RESOLVE_DELAY_MS);
  assert.equal(resolveDelayMs(RESOLVE_WINDOW_MS - 1), MAX_RESOLVE_DELAY_MS);
});

test('after a day of no usable answer the worker asks once a day, never giving up; a day holds a bounded number of asks', () => {
  assert.equal(resolveDelayMs(RESOLVE_WINDOW_MS), DAILY_RESOLVE_DELAY_MS);
  assert.equal(resolveDelayMs(400 * RESOLVE_WINDOW_MS), DAILY_RESOLVE_DELAY_MS, 'a year on, still asked');
  let asks = 0;
  let age = 0; // the charge itself
  for (; age < RESOLVE_WINDOW_MS; age += resolveDelayMs(age)) asks += 1;
  assert.equal(asks, 30, 'the charge and 29 asks within its first day');
  assert.ok(age - RESOLVE_WINDOW_MS < MAX_RESOLVE_DELAY_MS, 'then the first daily ask, within the hour after it');
});
