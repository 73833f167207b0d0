// Finalizing draft invoices (SPEC §12 "Drafts"): drafts whose `finalizes_at` has come are
// claimed in small batches (SKIP LOCKED on PostgreSQL) and finalized in that same transaction
// (billing/finalize.ts), so two workers never finalize one draft and a crash rolls the batch
// back for a retry: each draft takes exactly one number. A draft whose finalization throws is
// rolled back alone and retried after a backoff (db/row-failures.ts). Clock-aware (SPEC §11): a test clock
// customer's drafts are finalized by its clock's advance, at its time.
import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from '../db/database.ts';
import { finalizeDraft } from '../billing/finalize.ts';
import { claimRows } from '../db/locking.ts';
import { runIsolatedBatch, whereNotWaitingRetry, withRowRetries } from '../db/row-failures.ts';
import type { InvoiceRow } from '../db/tables/invoices.table.ts';
import { earliest, type JobScope, REAL_TIME, whereInScope } from '../db/scope.ts';
import type { Job } from './job.ts';

const BATCH_SIZE = 50;

const JOB = 'finalize_invoices';

/**
 * `scope`'s drafts whose `finalizes_at` ≤ `now` (ISO 8601), the longest waiting first: the
 * claim. Reads `invoices_due_for_finalization` (both scopes: drafts are short-lived and few).
 */
function draftsDueQuery(db: Kysely<Database>, scope: JobScope, now: string) {
  const due = whereInScope(
    db
      .selectFrom('invoices')
      .selectAll()
      // A literal: SQLite uses the partial index invoices_due_for_finalization only then.
      .where('status', '=', sql.lit('draft'))
      .where('finalizes_at', '<=', now)
      .orderBy('finalizes_at')
      .orderBy('id'),
    'invoices.test_clock_id',
    scope,
  );
  return whereNotWaitingRetry(due, JOB, 'invoices.id', now);
}

/**
 * Drafts of the scope with `finalizes_at` ≤ now, the longest waiting first, become `open`
 * (numbered, `invoice.finalized`) and are scheduled for a charge when their customer has a
 * saved method — the charge job runs after this one in each tick.
 */
export const finalizeInvoices: Job = {
  name: JOB,
  batchSize: BATCH_SIZE,
  run: async (deps, scope = REAL_TIME, log) => {
    const now = deps.clock.now().toISOString();
    const batch = {
      job: JOB,
      claim: (trx: Transaction<Database>) =>
        claimRows(draftsDueQuery(trx, scope, now).limit(BATCH_SIZE), trx).execute(),
      each: (trx: Transaction<Database>, row: InvoiceRow) => finalizeDraft(trx, deps, row),
    };
    const { rows } = await runIsolatedBatch(deps.db, deps.clock, batch, log);
    return rows.length;
  },
  dueNow: (deps) => draftsDueQuery(deps.db, REAL_TIME, deps.clock.now().toISOString()),
  nextDueAt: (deps, scope, after) => withRowRetries(deps.db, JOB, scope, after, nextDraftDue(deps.db, scope, after)),
};

/** The earliest `finalizes_at` of `scope`'s drafts after `after`. */
async function nextDraftDue(db: Kysely<Database>, scope: JobScope, after: Date): Promise<Date | null> {
  const row = await whereInScope(
    db
      .selectFrom('invoices')
      .select((eb) => eb.fn.min('finalizes_at').as('due'))
      .where('status', '=', sql.lit('draft'))
      .where('finalizes_at', '>', after.toISOString()),
    'invoices.test_clock_id',
    scope,
  ).executeTakeFirst();
  return earliest([row?.due]);
}
