// A customer as the core sees it (SPEC §3, §14): created or changed with a discount, read
// with its credit balances and discount and their ledger; its balance adjusted by hand (never
// below 0); deleted — refused while a subscription is live — with its saved payment methods
// detached.
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
import {
  customerBalance,
  customerBalances,
  listBalanceTransactions,
  lockCustomerBalances,
  recordBalanceTransaction,
  toBalanceTransaction,
} from '../modules/balances/balances.ledger.ts';
import type { BalanceTransaction, CreateAdjustmentInput } from '../modules/balances/balances.schemas.ts';
import type { ListParams, Page } from '../http/lists.ts';

const CURRENCIES = new Set(Intl.supportedValuesOf('currency'));

/**
 * A page of customer `id`'s credit balance transactions (SPEC §14), every currency or only
 * `currency`'s (ISO 4217). Throws 404 `not_found` for unknown, deleted or malformed ids.
 */
export async function listCustomerBalanceTransactions(
  db: Kysely<Database>,
  id: string,
  params: ListParams,
  currency?: string,
): Promise<Page<BalanceTransaction>> {
  await getCustomer(db, id);
  return listBalanceTransactions(db, id, params, currency);
}

/**
 * Adjusts customer `id`'s credit balance in `input.currency` by `input.amount` (minor units,
 * signed, not 0) — an `adjustment` transaction with its description, and
 * `customer.balance_changed`, in one transaction dated by the customer's clock (SPEC §14).
 * The balance is credit the customer holds, so it never goes below 0: the customer's row and
 * then its balance are locked (lock order, db/locking.ts: customers → … → customer balance),
 * the balance read under the lock, and an adjustment that would take it below 0 is refused
 * with 422 `invalid_state` — two at once cannot overdraw it. Throws 404 for unknown, deleted
 * or malformed ids and 400 for an amount of 0 or a currency that is not ISO 4217.
 */
export async function adjustCustomerBalance(
  db: Kysely<Database>,
  apiClock: Clock,
  id: string,
  input: CreateAdjustmentInput,
): Promise<BalanceTransaction> {
  if (input.amount === 0) {
    throw new ValidationError(
      'amount must not be 0: a positive amount gives credit, a negative one takes it',
      'amount',
    );
  }
  if (!CURRENCIES.has(input.currency)) {
    throw new ValidationError(
      `currency must be an ISO 4217 code such as NGN or USD (got "${input.currency}")`,
      'currency',
    );
  }
  return transactionWithRetry(db, async (trx) => {
    const row = await lockCustomer(trx, id);
    const clock = await clockFor(trx, { clock: apiClock }, row.test_clock_id);
    await lockCustomerBalances(trx, [id]);
    const balance = await customerBalance(trx, id, input.currency);
    const after = balance + input.amount;
    if (after < 0) {
      throw new AppError(
        'invalid_state',
        `an adjustment of ${input.amount} would take the ${input.currency} balance of customer ${id} below 0 (it is ${balance})`,
      );
    }
    if (!Number.isSafeInteger(after)) {
      throw new ValidationError(`the ${input.currency} balance would exceed ${Number.MAX_SAFE_INTEGER}`, 'amount');
    }
    const transaction = await recordBalanceTransaction(trx, clock, {
      customerId: id,
      testClockId: row.test_clock_id,
      currency: input.currency,
      amount: input.amount,
      kind: 'adjustment',
      description: input.description,
    });
    return toBalanceTransaction(transaction);
  });
}

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
