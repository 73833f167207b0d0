// Step 3 of the pipeline (SPEC §12): usage billed in arrears. The identity until SPEC §15
// defines meters and prices: `input.usage` admits only [] until then.
import type { ComposeInput, InvoiceLineDraft } from './types.ts';

/**
 * The lines after usage: `lines` as they are. SPEC §15 will append one `kind: usage` line per
 * tier touched of each metered charge of the previous period (and late events' adjustment
 * lines), each rounded once with roundHalfAwayFromZero.
 */
export function usage(lines: readonly InvoiceLineDraft[], _input: ComposeInput): readonly InvoiceLineDraft[] {
  return lines;
}
