// Step 1 of the pipeline (SPEC §12): the subscription fee of the period billed.
import { ComposeInputError } from './errors.ts';
import { toSafeAmount } from './rounding.ts';
import type { ComposeInput, InvoiceLineDraft } from './types.ts';

const DATE = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short', year: 'numeric', timeZone: 'UTC' });

/**
 * The subscription line of `input.subscription`'s period, appended to `lines`: the plan's
 * price × quantity (minor units, exact; AmountOutOfRangeError beyond Number.MAX_SAFE_INTEGER)
 * for `[period_start, period_end)`, described as "Pro × 1, 15 Jan 2026 – 15 Feb 2026"
 * (dates in UTC). A one-off invoice (no subscription) gets no fee. Throws ComposeInputError
 * for a negative or fractional price or a quantity below 1.
 */
export function fees(lines: readonly InvoiceLineDraft[], input: ComposeInput): readonly InvoiceLineDraft[] {
  const subscription = input.subscription;
  if (subscription === null) return lines;
  const { plan, quantity, period_start, period_end } = subscription;
  if (!Number.isSafeInteger(plan.amount) || plan.amount < 0 || !Number.isSafeInteger(quantity) || quantity < 1) {
    throw new ComposeInputError(
      `a fee is a price ≥ 0 × a quantity ≥ 1, both integers: not ${plan.amount} × ${quantity}`,
    );
  }
  const amount = toSafeAmount(BigInt(plan.amount) * BigInt(quantity), `${plan.name} × ${quantity}`);
  const period = `${DATE.format(new Date(period_start))} – ${DATE.format(new Date(period_end))}`;
  return [
    ...lines,
    {
      kind: 'subscription',
      description: `${plan.name} × ${quantity}, ${period}`,
      amount,
      currency: plan.currency,
      quantity,
      unit_amount: plan.amount,
      period_start,
      period_end,
      plan_id: plan.id,
      proration: false,
    },
  ];
}
