// Step 5 of the pipeline (SPEC §12, §14): taxes, on the lines after discounts. One `kind: tax`
// line per rate, each rounded once (half away from zero) from an exact fraction of integers:
// a percentage is ten-thousandths of a percent, so no float ever touches a tax amount.
import { e4ToPercentage, PERCENT_E4_SCALE } from '../../modules/tax-rates/tax-rates.percentage.ts';
import { roundHalfAwayFromZero, toSafeAmount } from './rounding.ts';
import type { ComposeInput, ComposeTaxRate, InvoiceLineDraft } from './types.ts';

const SCALE = BigInt(PERCENT_E4_SCALE);

/**
 * The lines after taxes: `lines` and one tax line per rate of `input.tax_rates`, none when
 * the customer is `exempt` or `reverse` (SPEC §14) or there is nothing to tax. Taxable =
 * the sum of the lines so far (after discounts; signed: a credit invoice's tax is negative).
 * - inclusive rates (P = their percentages summed): the net is round(taxable / (1 + P)) and
 *   their tax taxable − net, shown and not added (`inclusive: true`). One rate gives SPEC
 *   §14's `taxable − round(taxable / (1 + p))`; several share it as round(taxable × p / (1 +
 *   P)) each, the last taking what is left, so the lines sum to taxable − net exactly.
 * - exclusive rates: round(base × p) each, added, where base = the net of inclusive taxes
 *   (taxable when there are none), as Stripe taxes an amount that already contains a tax.
 * €49.00 at 19 %: exclusive 9.31 (total 58.31); inclusive 7.82 (total 49.00).
 */
export function taxes(lines: readonly InvoiceLineDraft[], input: ComposeInput): readonly InvoiceLineDraft[] {
  const taxed = lines.filter((line) => line.kind !== 'tax');
  if (input.tax_rates.length === 0 || taxed.length === 0 || (input.customer.tax_exempt ?? 'none') !== 'none') {
    return lines;
  }
  const taxable = taxed.reduce((sum, line) => sum + BigInt(line.amount), 0n);
  const period = {
    period_start: taxed.map((line) => line.period_start).reduce((a, b) => (a < b ? a : b)),
    period_end: taxed.map((line) => line.period_end).reduce((a, b) => (a > b ? a : b)),
  };
  const line = (rate: ComposeTaxRate, amount: number): InvoiceLineDraft => ({
    kind: 'tax',
    description: `${rate.display_name} ${e4ToPercentage(rate.percentage_e4)}%${rate.inclusive ? ' (included)' : ''}`,
    amount,
    currency: input.currency,
    quantity: 1,
    unit_amount: null,
    ...period,
    plan_id: null,
    tax_rate_id: rate.id,
    inclusive: rate.inclusive,
    proration: false,
  });

  const inclusive = input.tax_rates.filter((rate) => rate.inclusive);
  const exclusive = input.tax_rates.filter((rate) => !rate.inclusive);
  const added: InvoiceLineDraft[] = [];
  let inclusiveTax = 0n;
  if (inclusive.length > 0) {
    const divisor = SCALE + inclusive.reduce((sum, rate) => sum + BigInt(rate.percentage_e4), 0n);
    const net = BigInt(roundHalfAwayFromZero(taxable * SCALE, divisor, 'the amount before inclusive taxes'));
    inclusiveTax = taxable - net;
    let shared = 0n;
    inclusive.forEach((rate, index) => {
      const amount =
        index === inclusive.length - 1
          ? inclusiveTax - shared
          : BigInt(roundHalfAwayFromZero(taxable * BigInt(rate.percentage_e4), divisor, rate.display_name));
      shared += amount;
      added.push(line(rate, toSafeAmount(amount, rate.display_name)));
    });
  }
  const base = taxable - inclusiveTax;
  for (const rate of exclusive) {
    added.push(line(rate, roundHalfAwayFromZero(base * BigInt(rate.percentage_e4), SCALE, rate.display_name)));
  }
  return [...lines, ...added];
}
