// Proration items waiting for a subscription's next invoice (SPEC §13 `create_prorations`):
// the only writer of `subscription_pending_items`. Each item is a line rounded when its change
// was made; the invoice that takes it records itself on the item, in its own transaction.
import type { Kysely, Transaction } from 'kysely';
import { inList } from '../../db/bulk.ts';
import type { Database } from '../../db/database.ts';
import type { Clock } from '../../shared/clock.ts';
import { newId } from '../../shared/ids.ts';

/**
 * Items waiting for an invoice, oldest first: their ids (to mark them taken) and their lines.
 * `Line` is the invoice line the billing core stored (InvoiceLineDraft): this record keeps
 * it as JSON and does not read it, so it need not know the invoices record above it.
 */
export interface WaitingItems<Line> {
  ids: string[];
  lines: Line[];
}

/**
 * Stores `lines` (rounded `kind: proration` lines, minor units) as waiting for the next
 * invoice of `subscription`, in order. The caller holds the subscription's lock.
 */
export async function addPendingItems<Line>(
  trx: Transaction<Database>,
  clock: Clock,
  subscription: { id: string; test_clock_id: string | null },
  lines: readonly Line[],
): Promise<void> {
  if (lines.length === 0) return;
  const now = clock.now().toISOString();
  await trx
    .insertInto('subscription_pending_items')
    .values(
      lines.map((line) => ({
        id: newId('pendingItem'),
        subscription_id: subscription.id,
        line: JSON.stringify(line),
        invoice_id: null,
        created_at: now,
        test_clock_id: subscription.test_clock_id,
      })),
    )
    .execute();
}

/** The items of subscription `subscriptionId` no invoice has taken yet, in the order they were made. */
export async function waitingPendingItems<Line>(
  db: Kysely<Database> | Transaction<Database>,
  subscriptionId: string,
): Promise<WaitingItems<Line>> {
  const rows = await db
    .selectFrom('subscription_pending_items')
    .select(['id', 'line'])
    .where('subscription_id', '=', subscriptionId)
    .where('invoice_id', 'is', null)
    .orderBy('id')
    .execute();
  return { ids: rows.map((row) => row.id), lines: rows.map((row) => JSON.parse(row.line) as Line) };
}

/** Which of subscriptions `subscriptionIds` have items waiting (waitingPendingItems not empty), in one read. */
export async function subscriptionsWithWaitingItems(
  db: Kysely<Database> | Transaction<Database>,
  subscriptionIds: readonly string[],
): Promise<Set<string>> {
  if (subscriptionIds.length === 0) return new Set();
  const rows = await db
    .selectFrom('subscription_pending_items')
    .select('subscription_id')
    .distinct()
    .where(inList(db, 'subscription_id', subscriptionIds))
    .where('invoice_id', 'is', null)
    .execute();
  return new Set(rows.map((row) => row.subscription_id));
}

/** Records that invoice `invoiceId` took items `ids` (read by waitingPendingItems under the subscription's lock). */
export async function markPendingItemsInvoiced(
  trx: Transaction<Database>,
  ids: readonly string[],
  invoiceId: string,
): Promise<void> {
  if (ids.length === 0) return;
  await trx
    .updateTable('subscription_pending_items')
    .set({ invoice_id: invoiceId })
    .where('id', 'in', ids)
    .where('invoice_id', 'is', null)
    .execute();
}

/** Deletes every item of subscriptions `subscriptionIds` (a test clock's delete, SPEC §11). */
export async function deletePendingItems(
  trx: Transaction<Database>,
  subscriptionIds: readonly string[],
): Promise<void> {
  if (subscriptionIds.length === 0) return;
  await trx.deleteFrom('subscription_pending_items').where('subscription_id', 'in', subscriptionIds).execute();
}

/**
 * Puts back the items invoices `invoiceIds` took (drafts voided unsent: a pause's or a
 * cancel's, SPEC §12), so they wait for the subscription's next invoice again. The caller
 * holds the subscription's lock.
 */
export async function releasePendingItems(trx: Transaction<Database>, invoiceIds: readonly string[]): Promise<void> {
  if (invoiceIds.length === 0) return;
  await trx
    .updateTable('subscription_pending_items')
    .set({ invoice_id: null })
    .where('invoice_id', 'in', invoiceIds)
    .execute();
}
