import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { AmountOutOfRangeError } from './errors.ts';
import { roundHalfAwayFromZero, toSafeAmount } from './rounding.ts';

test('halves round away from zero on both sides (Math.round would give −2 for −2.5)', () => {
  const cases: [bigint, bigint, number][] = [
    [5n, 2n, 3],
    [-5n, 2n, -3],
    [5n, -2n, -3],
    [-5n, -2n, 3],
    [1n, 2n, 1],
    [-1n, 2n, -1],
    [7n, 3n, 2],
    [-7n, 3n, -2],
    [8n, 3n, 3],
    [-8n, 3n, -3],
    [0n, 7n, 0],
    [12n, 4n, 3],
  ];
  for (const [n, d, expected] of cases) assert.equal(roundHalfAwayFromZero(n, d), expected, `${n}/${d}`);
  assert.ok(Object.is(roundHalfAwayFromZero(-1n, 3n), 0), 'a negative fraction rounding to 0 is 0, not −0');
});

test('exact where floats are not: 1.005 × 100 is 100.49999… as a float, 100.5 → 101 here', () => {
  assert.equal(Math.round(1.005 * 100), 100);
  assert.equal(roundHalfAwayFromZero(1005n, 10n), 101);
  // A proration of a large price over a month to the millisecond stays exact.
  const price = 999_999_999_999n;
  const remaining = 1_296_000_000n;
  const period = 2_592_000_000n;
  assert.equal(roundHalfAwayFromZero(price * remaining, period), 500_000_000_000);
});

test('a zero denominator is a RangeError; a result beyond MAX_SAFE_INTEGER is refused, typed', () => {
  assert.throws(() => roundHalfAwayFromZero(1n, 0n), RangeError);
  const max = BigInt(Number.MAX_SAFE_INTEGER);
  assert.equal(roundHalfAwayFromZero(max, 1n), Number.MAX_SAFE_INTEGER);
  assert.equal(roundHalfAwayFromZero(-max, 1n), -Number.MAX_SAFE_INTEGER);
  assert.throws(() => roundHalfAwayFromZero(max + 1n, 1n), AmountOutOfRangeError);
  assert.throws(() => roundHalfAwayFromZero(-(max * 2n + 3n), 2n), AmountOutOfRangeError);
  assert.throws(
    () => toSafeAmount(max + 1n, 'the total'),
    (error: unknown) =>
      error instanceof AmountOutOfRangeError &&
      error.code === 'validation_error' &&
      error.status === 400 &&
      error.amount === max + 1n &&
      /the total \(9007199254740992 minor units\) exceeds 9007199254740991/.test(error.message),
  );
});

test('property: the result is the nearest integer, a tie goes away from zero', () => {
  fc.assert(
    fc.property(
      fc.bigInt({ min: -(10n ** 20n), max: 10n ** 20n }),
      fc.bigInt({ min: -(10n ** 6n), max: 10n ** 6n }).filter((d) => d !== 0n),
      (n, d) => {
        const q = n * d < 0n ? -1n : 1n;
        let r: bigint;
        try {
          r = BigInt(roundHalfAwayFromZero(n, d));
        } catch (error) {
          assert.ok(error instanceof AmountOutOfRangeError);
          return;
        }
        // |n/d − r| ≤ 1/2, i.e. |n − r·d| · 2 ≤ |d|; on a tie r is the one farther from zero.
        const gap = n - r * d;
        const absGap = gap < 0n ? -gap : gap;
        const absD = d < 0n ? -d : d;
        assert.ok(2n * absGap <= absD, `${n}/${d} → ${r}`);
        if (2n * absGap === absD) assert.ok(r * q > 0n, `tie ${n}/${d} → ${r} is away from zero`);
      },
    ),
  );
});

test('property: every tie k + ½ rounds to k + 1 above zero and to k below it', () => {
  fc.assert(
    fc.property(
      fc.bigInt({ min: -(10n ** 12n), max: 10n ** 12n }),
      fc.bigInt({ min: 1n, max: 10n ** 6n }),
      (k, half) => {
        const rounded = roundHalfAwayFromZero((2n * k + 1n) * half, 2n * half);
        assert.equal(rounded, Number(k >= 0n ? k + 1n : k));
      },
    ),
  );
});
