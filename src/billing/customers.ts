// A customer as the core sees it (SPEC §3, §14): read with its credit balances; deleted —
// refused while a subscription is live — with its saved payment methods detached.
import type { Kysely } from 'kysely';
import type { Database } from '../db/database.ts';
import { transactionWithRetry } from '../db/transaction.ts';
import { AppError } from '../http/errors.ts';
import type { Clock } from '../shared/clock.ts';
import { emitEvent } from '../modules/events/events.service.ts';
import { detachCustomerPaymentMethods } from '../modules/payment-methods/payment-methods.ts';
import { clockFor } from '../modules/test-clocks/test-clocks.time.ts';
import { customerHasLiveSubscription } from '../modules/subscriptions/subscriptions.lifecycle.ts';
import * as repo from '../modules/customers/customers.repository.ts';
import { getCustomer, toCustomer, lockCustomer } from '../modules/customers/customers.service.ts';
import type { CustomerDetail } from '../modules/customers/customers.schemas.ts';
import { customerBalances } from '../modules/balances/balances.ledger.ts';

/**
 * Customer `id` with its credit balances (GET /api/customers/{id}, SPEC §14): currency →
 * minor units, the non-zero ones. Read outside a transaction. Throws 404 `not_found` for
 * unknown, deleted or malformed ids.
 */
export async function getCustomerWithBalances(db: Kysely<Database>, id: string): Promise<CustomerDetail> {
  const customer = await getCustomer(db, id);
  return { ...customer, balances: await customerBalances(db, id) };
}

/**
 * Deletes a customer (the row is kept, marked deleted, so payments keep their owner) and
 * emits `customer.deleted` with the customer as it was. Its saved payment methods are
 * detached in the same transaction, each with `payment_method.detached` (SPEC §10: never
 * charged again). Throws 404 for unknown ids and 409 `conflict` while the customer has a
 * subscription that is not cancelled or expired.
 */
export async function deleteCustomer(db: Kysely<Database>, apiClock: Clock, id: string): Promise<void> {
  await transactionWithRetry(db, async (trx) => {
    const row = await lockCustomer(trx, id);
    const clock = await clockFor(trx, { clock: apiClock }, row.test_clock_id);
    const customer = toCustomer(row);
    if (await customerHasLiveSubscription(trx, id)) {
      throw new AppError('conflict', `customer ${id} has a subscription that is not cancelled or expired`);
    }
    const now = clock.now().toISOString();
    await repo.markCustomerDeleted(trx, id, now);
    await detachCustomerPaymentMethods(trx, clock, id);
    await emitEvent(trx, clock, 'customer.deleted', customer);
  });
}
