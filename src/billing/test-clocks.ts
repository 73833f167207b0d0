// Deleting a test clock (SPEC §11 "Deleting"): the clock and everything its customers own,
// refused while a charge of theirs is in flight with the provider.
import { lockTestClock } from '../modules/test-clocks/test-clocks.service.ts';
import type { Kysely } from 'kysely';
import { addToCount } from '../db/counts.ts';
import type { Database } from '../db/database.ts';
import { forUpdate } from '../db/locking.ts';
import { transactionWithRetry } from '../db/transaction.ts';
import { AppError } from '../http/errors.ts';
import { findChargesInFlight } from '../modules/payment-attempts/payment-attempts.ts';
import { deleteTestClockInvoiceNumbers } from '../modules/invoices/invoices.lifecycle.ts';
import { deleteTestClockBalanceTransactions } from '../modules/balances/balances.ledger.ts';

/**
 * Deletes clock `id` and every customer attached to it, with their subscriptions, invoices
 * (and payment attempts, and the clock's invoice number sequence), dunning cases (and steps),
 * payment methods, credit balance transactions and provider subscription references;
 * payments recorded for them stay, detached (customer, subscription and invoice null), and
 * so do the events already emitted. Locks parents before children (db/locking.ts) so a
 * worker step in flight finishes first and the next one finds nothing. Throws 404 for
 * unknown ids; 409 `conflict` (nothing deleted; `details.charges_in_flight`: attempt id,
 * invoice id, status) while a charge of its invoices is in flight with the provider
 * (findChargesInFlight, SPEC §11 "Deleting"): its answer would have nowhere to go. Any
 * status otherwise: deleting an advancing clock stops its advance.
 */
export async function deleteTestClock(db: Kysely<Database>, id: string): Promise<void> {
  await transactionWithRetry(db, async (trx) => {
    await lockTestClock(trx, id);
    const ids = async (table: 'customers' | 'subscriptions' | 'invoices' | 'dunning_cases') =>
      (
        await forUpdate(trx.selectFrom(table).select('id').where('test_clock_id', '=', id).orderBy('id'), trx).execute()
      ).map((row) => row.id);
    const customers = await ids('customers');
    const liveCustomers = await trx
      .selectFrom('customers')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('test_clock_id', '=', id)
      .where('deleted_at', 'is', null)
      .executeTakeFirstOrThrow();
    const subscriptions = await ids('subscriptions');
    const invoices = await ids('invoices');
    // Under the invoices' locks: a charge claimed before is visible now, a later claim skips them.
    const inFlight = await findChargesInFlight(trx, invoices);
    if (inFlight.length > 0) {
      throw new AppError(
        'conflict',
        `test clock ${id} has ${inFlight.length} charge(s) in flight with the provider; delete it once the worker has their outcome`,
        {
          charges_in_flight: inFlight.map((attempt) => ({
            attempt_id: attempt.id,
            invoice_id: attempt.invoice_id,
            status: attempt.status,
          })),
        },
      );
    }
    const cases = await ids('dunning_cases');
    if (cases.length > 0) {
      await trx.deleteFrom('dunning_steps').where('case_id', 'in', cases).execute();
      await trx.deleteFrom('dunning_cases').where('id', 'in', cases).execute();
    }
    if (customers.length > 0) {
      await trx
        .updateTable('payments')
        .set({ customer_id: null, subscription_id: null, invoice_id: null })
        .where('customer_id', 'in', customers)
        .execute();
    }
    // Their refunds stay with the payments, back on real time: the real-time worker resolves
    // a pending one still without a provider answer.
    await trx.updateTable('refunds').set({ test_clock_id: null }).where('test_clock_id', '=', id).execute();
    if (subscriptions.length > 0) {
      await trx
        .updateTable('payments')
        .set({ subscription_id: null, invoice_id: null })
        .where('subscription_id', 'in', subscriptions)
        .execute();
      await trx.deleteFrom('provider_subscription_references').where('subscription_id', 'in', subscriptions).execute();
    }
    // The clock's customers' credit ledger goes with them (it names their invoices).
    await deleteTestClockBalanceTransactions(trx, id);
    if (invoices.length > 0) {
      await trx.updateTable('payments').set({ invoice_id: null }).where('invoice_id', 'in', invoices).execute();
      await trx.deleteFrom('invoice_payment_attempts').where('invoice_id', 'in', invoices).execute();
      await trx.deleteFrom('invoices').where('id', 'in', invoices).execute();
      await addToCount(trx, 'invoices', -invoices.length);
    }
    await deleteTestClockInvoiceNumbers(trx, id);
    if (subscriptions.length > 0) {
      await trx.deleteFrom('subscriptions').where('id', 'in', subscriptions).execute();
      await addToCount(trx, 'subscriptions', -subscriptions.length);
    }
    if (customers.length > 0) {
      await trx.deleteFrom('payment_methods').where('customer_id', 'in', customers).execute();
      await trx.deleteFrom('customers').where('id', 'in', customers).execute();
      await addToCount(trx, 'customers', -Number(liveCustomers.n));
    }
    await trx.deleteFrom('test_clocks').where('id', '=', id).execute();
  });
}
