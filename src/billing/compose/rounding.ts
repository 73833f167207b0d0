// Money arithmetic of the pipeline (SPEC §12): each line is rounded once, half away from
// zero, from an exact fraction; products and sums are exact (BigInt) and refused when the
// result is beyond Number.MAX_SAFE_INTEGER rather than rounded a second time by floats.
import { AmountOutOfRangeError } from './errors.ts';

/** `value` as a number when it is a safe integer; throws AmountOutOfRangeError (naming `what`) otherwise. */
export function toSafeAmount(value: bigint, what: string): number {
  if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < -BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new AmountOutOfRangeError(what, value);
  }
  return Number(value);
}

/**
 * `numerator / denominator` rounded to an integer, half away from zero (2.5 → 3, −2.5 → −3;
 * Math.round would give −2), computed exactly: the steps that bill a fraction — a proration's
 * remaining time (§13), a percentage discount or tax (§14), a decimal unit price (§15) — pass
 * their fraction unrounded, as integers, and round once here. Throws RangeError for a zero
 * denominator and AmountOutOfRangeError (naming `what`) when the result is not a safe integer.
 */
export function roundHalfAwayFromZero(numerator: bigint, denominator: bigint, what = 'the amount'): number {
  if (denominator === 0n) throw new RangeError('cannot divide an amount by zero');
  const negative = numerator < 0n !== denominator < 0n;
  const n = numerator < 0n ? -numerator : numerator;
  const d = denominator < 0n ? -denominator : denominator;
  // Round the magnitude half up, then give it its sign: that is half away from zero.
  const magnitude = (2n * n + d) / (2n * d);
  return toSafeAmount(negative ? -magnitude : magnitude, what);
}
