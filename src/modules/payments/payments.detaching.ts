// What deleting a test clock does to payments and refunds (SPEC §11 "Deleting"): they stay,
// detached from the customers, subscriptions and invoices that go, and their refunds go back
// to real time. Money recorded is never deleted; the caller (billing/test-clocks.ts) holds
// the locks of what goes and calls these in its order.
import type { Transaction } from 'kysely';
import type { Database } from '../../db/database.ts';

/**
 * Detaches the payments of customers `customerIds` (`cus_…`) from them, their subscriptions
 * and their invoices (all three null). No events.
 */
export async function detachPaymentsOfCustomers(
  trx: Transaction<Database>,
  customerIds: readonly string[],
): Promise<void> {
  if (customerIds.length === 0) return;
  await trx
    .updateTable('payments')
    .set({ customer_id: null, subscription_id: null, invoice_id: null })
    .where('customer_id', 'in', customerIds)
    .execute();
}

/**
 * Moves the refunds of test clock `testClockId` back to real time (`test_clock_id` null), so
 * the real-time worker resolves a pending one still without a provider answer. No events.
 */
export async function moveTestClockRefundsToRealTime(trx: Transaction<Database>, testClockId: string): Promise<void> {
  await trx.updateTable('refunds').set({ test_clock_id: null }).where('test_clock_id', '=', testClockId).execute();
}

/**
 * Detaches the payments of subscriptions `subscriptionIds` (`sub_…`) from them and from
 * their invoices (a payment of another customer may name one). No events.
 */
export async function detachPaymentsOfSubscriptions(
  trx: Transaction<Database>,
  subscriptionIds: readonly string[],
): Promise<void> {
  if (subscriptionIds.length === 0) return;
  await trx
    .updateTable('payments')
    .set({ subscription_id: null, invoice_id: null })
    .where('subscription_id', 'in', subscriptionIds)
    .execute();
}

/** Detaches the payments naming invoices `invoiceIds` (`inv_…`) from them. No events. */
export async function detachPaymentsOfInvoices(
  trx: Transaction<Database>,
  invoiceIds: readonly string[],
): Promise<void> {
  if (invoiceIds.length === 0) return;
  await trx.updateTable('payments').set({ invoice_id: null }).where('invoice_id', 'in', invoiceIds).execute();
}
