// A customer as the core sees it (SPEC §3, §14): created or changed with a discount, read
// with its credit balances and discount; deleted — refused while a subscription is live —
// with its saved payment methods detached.
import type { Kysely } from 'kysely';
import type { Database } from '../db/database.ts';
import { transactionWithRetry } from '../db/transaction.ts';
import { AppError, ValidationError } from '../http/errors.ts';
import type { Clock } from '../shared/clock.ts';
import { emitEvent } from '../modules/events/events.service.ts';
import { detachCustomerPaymentMethods } from '../modules/payment-methods/payment-methods.ts';
import { clockFor } from '../modules/test-clocks/test-clocks.time.ts';
import { customerHasLiveSubscription } from '../modules/subscriptions/subscriptions.lifecycle.ts';
import * as repo from '../modules/customers/customers.repository.ts';
import {
  createCustomer,
  getCustomer,
  lockCustomer,
  toCustomer,
  updateCustomer,
} from '../modules/customers/customers.service.ts';
import type {
  CreateCustomerInput,
  Customer,
  CustomerDetail,
  UpdateCustomerInput,
} from '../modules/customers/customers.schemas.ts';
import { findDiscount, toDiscount } from '../modules/coupons/coupons.discounts.ts';
import { asksForDiscount, redeemDiscount, removeDiscountOfCustomer } from './coupons.ts';
import { customerBalances } from '../modules/balances/balances.ledger.ts';

/**
 * Customer `id` with its credit balances (GET /api/customers/{id}, SPEC §14): currency →
 * minor units, the non-zero ones. Read outside a transaction. Throws 404 `not_found` for
 * unknown, deleted or malformed ids.
 */
export async function getCustomerWithBalances(db: Kysely<Database>, clock: Clock, id: string): Promise<CustomerDetail> {
  const customer = await getCustomer(db, id);
  const found = await findDiscount(db, id, null);
  const balances = await customerBalances(db, id);
  return found
    ? { ...customer, discount: toDiscount(found.discount, found.coupon, clock.now()), balances }
    : { ...customer, balances };
}

/**
 * Creates a customer (modules/customers createCustomer: its rules and 400/409s) and, with
 * `coupon` or `promotion_code`, redeems it as the customer's discount in the same transaction
 * (billing/coupons.ts redeemDiscount: its 400s; nothing is created then). Returns the customer
 * as `customer.created` carries it; GET one shows its discount.
 */
export async function createCustomerWithDiscount(
  db: Kysely<Database>,
  clock: Clock,
  input: CreateCustomerInput,
  options: { testClocks: boolean },
): Promise<Customer> {
  const { coupon, promotion_code, ...fields } = input;
  const request = { coupon, promotion_code };
  return createCustomer(db, clock, fields, options, async (trx, row, customerClock) => {
    if (asksForDiscount(request)) {
      await redeemDiscount(trx, customerClock, request, { customer: row, subscription: null });
    }
  });
}

/**
 * Changes a customer (modules/customers updateCustomer) and, in the same transaction, its own
 * discount: `coupon` or `promotion_code` redeems a new one (replacing the one it had),
 * `coupon: null` removes it (`customer.discount.deleted`). Returns the customer as changed
 * (GET one shows its discount). Throws what updateCustomer and redeemDiscount throw (nothing changes).
 */
export async function updateCustomerWithDiscount(
  db: Kysely<Database>,
  clock: Clock,
  id: string,
  patch: UpdateCustomerInput,
): Promise<Customer> {
  const { coupon, promotion_code, ...fields } = patch;
  const request = { coupon: coupon ?? undefined, promotion_code };
  return updateCustomer(db, clock, id, fields, async (trx, row, customerClock) => {
    if (coupon === null) {
      if (promotion_code !== undefined) {
        throw new ValidationError('coupon: null removes the discount; it cannot come with a promotion_code', 'coupon');
      }
      await removeDiscountOfCustomer(trx, customerClock, row.id);
    } else if (asksForDiscount(request)) {
      await redeemDiscount(trx, customerClock, request, { customer: row, subscription: null });
    }
  });
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
