// A tax rate's percentage, exactly (SPEC §14: 0–100 with up to 4 decimals). JSON gives a
// binary float; its shortest decimal text is what the client wrote, so the percentage is
// read from that text into an integer of ten-thousandths of a percent and never multiplied
// as a float: 19 → 190000, 7.25 → 72500, 100 → 1000000.

/** Ten-thousandths of a percent in 100 %: the scale of `percentage_e4`. */
export const PERCENT_E4_SCALE = 1_000_000;

/**
 * `percentage` (a JSON number, 0 … 100) as an integer of ten-thousandths of a percent, read
 * from its shortest decimal text (what the client sent), or undefined when it has more than
 * 4 decimals, is negative, above 100 or not finite.
 */
export function percentageToE4(percentage: number): number | undefined {
  if (!Number.isFinite(percentage) || percentage < 0 || percentage > 100) return undefined;
  // String() of a float is its shortest round-trip text; tiny values come as "1e-7".
  const match = /^(\d+)(?:\.(\d{1,4}))?$/.exec(String(percentage));
  if (!match) return undefined;
  return Number(match[1]) * 10_000 + Number((match[2] ?? '').padEnd(4, '0'));
}

/** Ten-thousandths of a percent back as the percentage a client sees: 72500 → 7.25. */
export function e4ToPercentage(e4: number): number {
  // Integer division and a decimal text: the float nearest the exact decimal, no drift.
  const whole = Math.trunc(e4 / 10_000);
  const fraction = String(e4 % 10_000).padStart(4, '0');
  return Number(`${whole}.${fraction}`);
}
