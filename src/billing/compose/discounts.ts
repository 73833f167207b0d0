// Step 4 of the pipeline (SPEC §12, §14): discounts. One negative `kind: discount` line per
// discount that applies, computed over the lines before it, before taxes.
import { roundHalfAwayFromZero } from './rounding.ts';
import type { ComposeDiscount, ComposeInput, InvoiceLineDraft, InvoiceLineKind } from './types.ts';

/** The lines a coupon discounts: what the customer is charged for, not earlier discounts or taxes. */
const DISCOUNTABLE: ReadonlySet<InvoiceLineKind> = new Set(['subscription', 'proration', 'usage']);

/** 100 % in hundredths of a percent: percent_off_bps / BPS is the fraction taken off. */
const BPS = 10_000n;

/**
 * The lines after discounts: `lines` with one `kind: discount` line appended per discount of
 * `input.discounts` that applies, in their order (the subscription's, then the customer's).
 *
 * - A discount applies while the invoice's period starts before its `end` (null: no end).
 * - Its base is the sum of the subscription, proration and usage lines of the coupon's
 *   `applies_to_plans` (every such line when null); nothing is taken off a base ≤ 0.
 * - percent_off: `round(base × bps / 10000)`, exactly, rounded once half away from zero
 *   (20 % of 4900 → 980). amount_off: applies only in its own currency (another currency's
 *   coupon adds no line).
 * - Each discount is computed on the original base, not on what an earlier discount left
 *   (Stripe's rule for several discounts), then capped at its base and at what the invoice
 *   still totals: a discount never takes the invoice below zero.
 *
 * Each line: amount −off (minor units, < 0), `coupon_id`, quantity 1, no unit amount, the
 * span of the lines it discounts. Pure; a discount that takes nothing adds no line.
 */
export function discounts(lines: readonly InvoiceLineDraft[], input: ComposeInput): readonly InvoiceLineDraft[] {
  if (input.discounts.length === 0 || lines.length === 0) return lines;
  const periodStart = Date.parse(input.subscription?.period_start ?? lines[0]!.period_start);
  let remaining = lines.reduce((sum, line) => sum + BigInt(line.amount), 0n);
  const added: InvoiceLineDraft[] = [];
  for (const discount of input.discounts) {
    if (discount.end !== null && periodStart >= Date.parse(discount.end)) continue;
    const base = discountedLines(lines, discount);
    if (base.length === 0) continue;
    const baseAmount = base.reduce((sum, line) => sum + BigInt(line.amount), 0n);
    const wanted = amountOff(discount, baseAmount, input.currency);
    const off = min(wanted, baseAmount, remaining);
    if (off <= 0n) continue;
    remaining -= off;
    added.push(discountLine(discount, base, -Number(off), input.currency));
  }
  return added.length === 0 ? lines : [...lines, ...added];
}

/** The lines `discount`'s coupon applies to: discountable kinds, of its plans when it names some. */
function discountedLines(lines: readonly InvoiceLineDraft[], discount: ComposeDiscount): InvoiceLineDraft[] {
  const plans = discount.coupon.applies_to_plans;
  return lines.filter(
    (line) =>
      DISCOUNTABLE.has(line.kind) && (plans === null || (line.plan_id !== null && plans.includes(line.plan_id))),
  );
}

/** What the coupon takes off `base` before any cap (minor units); 0 for an amount in another currency. */
function amountOff(discount: ComposeDiscount, base: bigint, currency: string): bigint {
  const { coupon } = discount;
  if (base <= 0n) return 0n;
  if (coupon.percent_off_bps !== null) {
    return BigInt(roundHalfAwayFromZero(base * BigInt(coupon.percent_off_bps), BPS, `${coupon.name} on ${base}`));
  }
  if (coupon.amount_off === null || coupon.currency !== currency) return 0n;
  return BigInt(coupon.amount_off);
}

function min(...values: bigint[]): bigint {
  return values.reduce((a, b) => (b < a ? b : a));
}

/** "Launch (20% off)" or "Welcome (€5.00 off)": the coupon's name and what it takes. */
function describe(discount: ComposeDiscount): string {
  const { coupon } = discount;
  if (coupon.percent_off_bps !== null) return `${coupon.name} (${coupon.percent_off_bps / 100}% off)`;
  const format = new Intl.NumberFormat('en', { style: 'currency', currency: coupon.currency! });
  const digits = format.resolvedOptions().maximumFractionDigits ?? 2;
  return `${coupon.name} (${format.format(coupon.amount_off! / 10 ** digits)} off)`;
}

function discountLine(
  discount: ComposeDiscount,
  base: readonly InvoiceLineDraft[],
  amount: number,
  currency: string,
): InvoiceLineDraft {
  const starts = base.map((line) => line.period_start).sort();
  const ends = base.map((line) => line.period_end).sort();
  return {
    kind: 'discount',
    description: describe(discount),
    amount,
    currency,
    quantity: 1,
    unit_amount: null,
    period_start: starts[0]!,
    period_end: ends.at(-1)!,
    plan_id: null,
    coupon_id: discount.coupon.id,
    proration: false,
  };
}
