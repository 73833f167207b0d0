// Step 4 of the pipeline (SPEC §12): discounts. The identity until SPEC §14 defines coupons:
// `input.discounts` admits only [] until then.
import type { ComposeInput, InvoiceLineDraft } from './types.ts';

/**
 * The lines after discounts: `lines` as they are. SPEC §14 will append one negative
 * `kind: discount` line per coupon applied (percent_off rounded once with
 * roundHalfAwayFromZero, amount_off), never taking the invoice below zero.
 */
export function discounts(lines: readonly InvoiceLineDraft[], _input: ComposeInput): readonly InvoiceLineDraft[] {
  return lines;
}
