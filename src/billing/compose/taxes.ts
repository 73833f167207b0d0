// Step 5 of the pipeline (SPEC §12): taxes, on the lines after discounts. The identity until
// SPEC §14 defines tax rates: `input.tax_rates` admits only [] until then.
import type { ComposeInput, InvoiceLineDraft } from './types.ts';

/**
 * The lines after taxes: `lines` as they are. SPEC §14 will append one `kind: tax` line per
 * rate (exclusive: round(taxable × p); inclusive: taxable − round(taxable / (1 + p)), each
 * rounded once with roundHalfAwayFromZero).
 */
export function taxes(lines: readonly InvoiceLineDraft[], _input: ComposeInput): readonly InvoiceLineDraft[] {
  return lines;
}
