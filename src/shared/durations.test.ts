import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseDuration, parseDurationList } from './durations.ts';

test('durations are an integer and one of ms, s, m, h, d', () => {
  assert.equal(parseDuration('250ms'), 250);
  assert.equal(parseDuration('5s'), 5000);
  assert.equal(parseDuration('5m'), 300_000);
  assert.equal(parseDuration('2h'), 7_200_000);
  assert.equal(parseDuration('3d'), 259_200_000);
  for (const text of ['', '5', '1.5h', '5 s', '-1s', '5w', 's', '5sec'])
    assert.equal(parseDuration(text), undefined, text);
});

test('duration lists keep their order and refuse any bad item', () => {
  assert.deepEqual(parseDurationList('5s, 5m,30m'), [5000, 300_000, 1_800_000]);
  assert.equal(parseDurationList('5s,,5m'), undefined);
  assert.equal(parseDurationList('5s,x'), undefined);
});
