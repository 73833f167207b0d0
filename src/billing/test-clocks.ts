// Deleting a test clock (SPEC §11 "Deleting"): the clock and everything its customers own,
// refused while a charge of theirs is in flight with the provider.
// Each table is written by its record's function; the reads and locks stay here, in the
// lock order (db/locking.ts), and the deletes run children before parents.
import type { Kysely } from 'kysely';
import type { Database } from '../db/database.ts';
import { forUpdate } from '../db/locking.ts';
import { deleteRowFailuresOfTestClock } from '../db/row-failures.ts';
import { transactionWithRetry } from '../db/transaction.ts';
import { AppError } from '../http/errors.ts';
import { deleteTestClockBalanceTransactions } from '../modules/balances/balances.ledger.ts';
import { deleteDiscountsOfCustomers } from '../modules/coupons/coupons.discounts.ts';
import { deleteTestClockCreditNotes } from '../modules/credit-notes/credit-notes.records.ts';
import { deleteCustomers } from '../modules/customers/customers.repository.ts';
import { deleteDunningCases } from '../modules/dunning/dunning.cases.ts';
import { deleteInvoices, deleteTestClockInvoiceNumbers } from '../modules/invoices/invoices.lifecycle.ts';
import { deleteAttemptsOfInvoices, findChargesInFlight } from '../modules/payment-attempts/payment-attempts.ts';
import { deletePaymentMethodsOfCustomers } from '../modules/payment-methods/payment-methods.ts';
import {
  detachPaymentsOfCustomers,
  detachPaymentsOfInvoices,
  detachPaymentsOfSubscriptions,
  moveTestClockRefundsToRealTime,
} from '../modules/payments/payments.detaching.ts';
import {
  deleteProviderSubscriptionReferences,
  deleteSubscriptions,
} from '../modules/subscriptions/subscriptions.lifecycle.ts';
import { deleteTestClockRow, lockTestClock } from '../modules/test-clocks/test-clocks.service.ts';
import { deleteUsageBillingOfSubscriptions } from './usage-billing.ts';

/**
 * Deletes clock `id` and every customer attached to it, with their subscriptions, invoices
 * (and payment attempts, and the clock's invoice number sequence), dunning cases (and steps),
 * payment methods, credit balance transactions, provider subscription references, what
 * their usage billed (billed_usage, usage_spans) and the worker's failure records of its rows;
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
    await deleteDunningCases(trx, cases);
    await detachPaymentsOfCustomers(trx, customers);
    // Their refunds stay with the payments, back on real time: the real-time worker resolves
    // a pending one still without a provider answer.
    await moveTestClockRefundsToRealTime(trx, id);
    await detachPaymentsOfSubscriptions(trx, subscriptions);
    await deleteProviderSubscriptionReferences(trx, subscriptions);
    // The clock's customers' credit ledger goes with them (it names their invoices).
    await deleteTestClockBalanceTransactions(trx, id);
    await deleteTestClockCreditNotes(trx, id);
    // What their usage billed names their invoices and subscriptions.
    await deleteUsageBillingOfSubscriptions(trx, subscriptions);
    await detachPaymentsOfInvoices(trx, invoices);
    await deleteAttemptsOfInvoices(trx, invoices);
    await deleteInvoices(trx, invoices);
    await deleteTestClockInvoiceNumbers(trx, id);
    await deleteDiscountsOfCustomers(trx, customers);
    await deleteSubscriptions(trx, subscriptions);
    await deletePaymentMethodsOfCustomers(trx, customers);
    await deleteCustomers(trx, customers, Number(liveCustomers.n));
    await deleteRowFailuresOfTestClock(trx, id);
    await deleteTestClockRow(trx, id);
  });
}
