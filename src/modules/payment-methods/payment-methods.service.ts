// What the payment-method routes do (SPEC §10): each request's one transaction around the
// writer's functions (payment-methods.ts, the only writer of `payment_methods`).
import type { Kysely } from 'kysely';
import type { Database } from '../../db/database.ts';
import { transactionWithRetry } from '../../db/transaction.ts';
import type { ListParams, Page } from '../../http/lists.ts';
import type { Clock } from '../../shared/clock.ts';
import type { PaymentMethod, UpdatePaymentMethodInput } from './payment-methods.schemas.ts';
import { detachPaymentMethod, listPaymentMethods, updatePaymentMethod } from './payment-methods.ts';

/** A page of customer `customerId`'s active methods. Throws 404 for an unknown customer. */
export async function listCustomerPaymentMethods(
  db: Kysely<Database>,
  customerId: string,
  params: ListParams,
): Promise<Page<PaymentMethod>> {
  return listPaymentMethods(db, customerId, params);
}

/** Detaches method `id` of customer `customerId` (emits `payment_method.detached`). Throws 404. */
export async function detachCustomerPaymentMethod(
  db: Kysely<Database>,
  clock: Clock,
  customerId: string,
  id: string,
): Promise<PaymentMethod> {
  return transactionWithRetry(db, (trx) => detachPaymentMethod(trx, clock, customerId, id));
}

/** Applies `input` (`{default: true}`) to method `id` of customer `customerId`. Throws 404, 400. */
export async function updateCustomerPaymentMethod(
  db: Kysely<Database>,
  clock: Clock,
  customerId: string,
  id: string,
  input: UpdatePaymentMethodInput,
): Promise<PaymentMethod> {
  return transactionWithRetry(db, (trx) => updatePaymentMethod(trx, clock, customerId, id, input));
}
