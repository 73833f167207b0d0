// Step 2 of the pipeline (SPEC §12): the proration items a plan or quantity change left
// pending (SPEC §13 `create_prorations`) become lines of the next invoice, in their order.
import { ComposeInputError } from './errors.ts';
import type { ComposeInput, InvoiceLineDraft } from './types.ts';

/**
 * `lines` followed by `input.pending_items`, unchanged: each was computed and rounded once
 * when the change was made (so the preview and the change agree to the minor unit, SPEC §13).
 * Throws ComposeInputError for an item that is not a proration (`kind: proration`,
 * `proration: true`). Without pending items (every invoice until SPEC §13) it is the identity.
 */
export function prorations(lines: readonly InvoiceLineDraft[], input: ComposeInput): readonly InvoiceLineDraft[] {
  if (input.pending_items.length === 0) return lines;
  for (const item of input.pending_items) {
    if (item.kind !== 'proration' || !item.proration) {
      throw new ComposeInputError(`a pending item must be a proration, not "${item.kind}": ${item.description}`);
    }
  }
  return [...lines, ...input.pending_items];
}
