// What the payment-method routes do (SPEC §10): each request's one transaction around the
// writer's functions (payment-methods.ts, the only writer of `payment_methods`).
import type { Kysely } from 'kysely';
import type { Database } from '../../db/database.ts';
import { transactionWithRetry } from '../../db/transaction.ts';
import type { ListParams, Page } from '../../http/lists.ts';
import type { Clock } from '../../shared/clock.ts';
import { getCustomer, lockCustomer } from '../customers/customers.service.ts';
import type { PaymentMethod, UpdatePaymentMethodInput } from './payment-methods.schemas.ts';
import { detachPaymentMethod, listPaymentMethods, updatePaymentMethod } from './payment-methods.ts';

/** A page of customer `customerId`'s active methods. Throws 404 for an unknown, deleted or malformed customer. */
export async function listCustomerPaymentMethods(
  db: Kysely<Database>,
  customerId: string,
  params: ListParams,
): Promise<Page<PaymentMethod>> {
  await getCustomer(db, customerId);
  return listPaymentMethods(db, customerId, params);
}

/**
 * Detaches method `id` of live customer `customerId` (emits `payment_method.detached`), under
 * the customer's lock (customers.service lockCustomer: changes to one customer's methods
 * queue, and a delete of the customer waits). Throws 404.
 */
export async function detachCustomerPaymentMethod(
  db: Kysely<Database>,
  clock: Clock,
  customerId: string,
  id: string,
): Promise<PaymentMethod> {
  return transactionWithRetry(db, async (trx) => {
    await lockCustomer(trx, customerId);
    return detachPaymentMethod(trx, clock, customerId, id);
  });
}

/** Applies `input` (`{default: true}`) to method `id` of customer `customerId`. Throws 404, 400. */
export async function updateCustomerPaymentMethod(
  db: Kysely<Database>,
  clock: Clock,
  customerId: string,
  id: string,
  input: UpdatePaymentMethodInput,
): Promise<PaymentMethod> {
  return transactionWithRetry(db, async (trx) => {
    await lockCustomer(trx, customerId);
    return updatePaymentMethod(trx, clock, customerId, id, input);
  });
}
