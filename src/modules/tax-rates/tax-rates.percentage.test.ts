// A tax rate's percentage is read exactly from what the client wrote (SPEC §14: 4 decimals).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { e4ToPercentage, percentageToE4 } from './tax-rates.percentage.ts';

test('percentages of up to 4 decimals become ten-thousandths of a percent exactly', () => {
  assert.deepEqual(
    [19, 7.25, 0, 100, 0.0001, 12.3456, 8.875, 33.3333].map(percentageToE4),
    [190000, 72500, 0, 1000000, 1, 123456, 88750, 333333],
  );
});

test('more than 4 decimals, negative, above 100 or not finite is refused', () => {
  for (const bad of [19.00001, 0.00001, 1e-7, -1, 100.0001, 101, Number.NaN, Number.POSITIVE_INFINITY, 0.1 + 0.2]) {
    assert.equal(percentageToE4(bad), undefined, String(bad));
  }
});

test('property: a percentage of 4 decimals survives the round trip e4 → percent → e4', () => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 1_000_000 }), (e4) => {
      assert.equal(percentageToE4(e4ToPercentage(e4)), e4);
    }),
  );
});
