// Finalizing draft invoices (SPEC §12 "Drafts"): a renewal with usage or prorations is issued
// `draft` and finalized when its `finalizes_at` passes (the worker's finalize_invoices) or an
// admin asks (POST /api/invoices/{id}/finalize). Finalized, it is numbered, `open`
// (`invoice.finalized`) and collected exactly as a renewal issued open: charged at once when
// its customer has a saved method (SPEC §10), past due RENEWAL_GRACE after its `due_at`.
import type { Transaction } from 'kysely';
import type { Database } from '../db/database.ts';
import { transactionWithRetry } from '../db/transaction.ts';
import type { InvoiceRow } from '../db/tables/invoices.table.ts';
import type { Deps } from '../deps.ts';
import { StateConflictError } from '../http/errors.ts';
import {
  finalizeInvoice,
  type Invoice,
  type InvoiceContext,
  lockInvoice,
} from '../modules/invoices/invoices.lifecycle.ts';
import { hasDefaultPaymentMethod } from '../modules/payment-methods/payment-methods.ts';
import { clockFor } from '../modules/test-clocks/test-clocks.time.ts';

/** The exact 409 message for a finalize the invoice's state forbids (only a `draft` is finalized). */
export const CANNOT_FINALIZE = 'cannot be finalized in its current state';

/**
 * Finalizes the locked draft `row` in `trx` (finalizeInvoice: the next gap-free number,
 * `open`, `invoice.finalized`; `paid` at once when it owes nothing) and schedules its charge at
 * `ctx.clock`'s now when its customer has a saved default method, as a renewal issued open is
 * (SPEC §10). Throws ForbiddenInvoiceTransitionError unless `row` is a draft. Returns the
 * invoice after.
 */
export async function finalizeDraft(
  trx: Transaction<Database>,
  ctx: InvoiceContext,
  row: InvoiceRow,
): Promise<Invoice> {
  const charge = await hasDefaultPaymentMethod(trx, row.customer_id);
  return finalizeInvoice(trx, ctx, row, {
    next_payment_attempt_at: charge ? ctx.clock.now().toISOString() : null,
  });
}

/**
 * POST /api/invoices/{id}/finalize: finalizes draft `id` now, before its `finalizes_at`
 * (finalizeDraft, at its customer's clock's time), in one transaction. Throws 404 for unknown
 * or malformed ids, 409 `validation_error` CANNOT_FINALIZE for any other status (changing
 * nothing).
 */
export async function finalizeInvoiceNow(deps: Deps, id: string): Promise<Invoice> {
  return transactionWithRetry(deps.db, async (trx) => {
    const row = await lockInvoice(trx, id);
    if (row.status !== 'draft') throw new StateConflictError(CANNOT_FINALIZE);
    const clock = await clockFor(trx, deps, row.test_clock_id);
    return finalizeDraft(trx, { ...deps, clock }, row);
  });
}
