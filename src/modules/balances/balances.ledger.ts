// The customer credit balance (SPEC §14): an append-only ledger per customer and currency,
// the only writer of `customer_balance_transactions`. The balance is the sum of its
// transactions; nothing stores it twice. Credit used (`applied_to_invoice`) is taken under a
// lock of the customer's balance, so two invoices issued at once never spend it twice.
import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from '../../db/database.ts';
import { isPostgres } from '../../db/column-types.ts';
import { lockKeys } from '../../db/locking.ts';
import type { Clock } from '../../shared/clock.ts';
import { newId } from '../../shared/ids.ts';
import type { BalanceTransactionKind, CustomerBalanceTransactionRow } from '../../db/tables/balances.table.ts';
import { compiledQuery, type Param } from '../../db/compiled-queries.ts';
import { defineList, type ListParams, type Page } from '../../http/lists.ts';
import { pickFields } from '../../http/schemas.ts';
import { emitEvent } from '../events/events.service.ts';
import {
  BALANCE_TRANSACTION_SORT_FIELDS,
  type BalanceTransaction,
  balanceTransactionSchema,
} from './balances.schemas.ts';

/** A ledger row as the API and `customer.balance_changed` show it: `kind` is `type`, amounts numbers. */
export function toBalanceTransaction(row: CustomerBalanceTransactionRow): BalanceTransaction {
  return pickFields(balanceTransactionSchema, { ...row, type: row.kind, amount: Number(row.amount) });
}

const transactionsList = defineList({
  from: (db) => db.selectFrom('customer_balance_transactions'),
  select: (query) => query.selectAll(),
  sortable: BALANCE_TRANSACTION_SORT_FIELDS,
  map: (rows) => rows.map(toBalanceTransaction),
});

/**
 * A page of customer `customerId`'s balance transactions (SPEC §14), newest first by
 * default, in every currency or only `currency`'s. The caller checks that the customer exists.
 */
export async function listBalanceTransactions(
  db: Kysely<Database>,
  customerId: string,
  params: ListParams,
  currency?: string,
): Promise<Page<BalanceTransaction>> {
  return transactionsList.page(db, params, { customer_id: customerId, currency });
}

/**
 * Customer `customerId`'s credit balance in `currency` (ISO 4217): the sum of its
 * transactions, in minor units (≥ 0 while only overpayments add to it and invoices take
 * what it holds). Inside a transaction that took lockCustomerBalances first, it is the
 * balance no one else can spend until commit.
 */
export async function customerBalance(
  db: Kysely<Database> | Transaction<Database>,
  customerId: string,
  currency: string,
): Promise<number> {
  const row = await balanceOf.executeTakeFirst(db, { customerId, currency });
  return Number(row?.balance ?? 0);
}

const balanceOf = compiledQuery((db, param: Param<{ customerId: string; currency: string }>) =>
  db
    .selectFrom('customer_balance_transactions')
    .select((eb) => eb.fn.sum<string | number | null>('amount').as('balance'))
    .where('customer_id', '=', param('customerId'))
    .where('currency', '=', param('currency')),
);

/**
 * The balances of customers `customerIds` in every currency they have one, in one read:
 * customerBalance for a batch. Keyed `<customer id> <currency>`; minor units, signed; a
 * (customer, currency) with no transaction is absent (0).
 */
export async function customerBalancesOf(
  db: Kysely<Database> | Transaction<Database>,
  customerIds: readonly string[],
): Promise<Map<string, number>> {
  if (customerIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('customer_balance_transactions')
    .select(['customer_id', 'currency', (eb) => eb.fn.sum<string | number>('amount').as('balance')])
    .where('customer_id', 'in', [...new Set(customerIds)])
    .groupBy(['customer_id', 'currency'])
    .execute();
  return new Map(rows.map((row) => [`${row.customer_id} ${row.currency}`, Number(row.balance)]));
}

/**
 * Every non-zero balance of customer `customerId`: currency (ISO 4217) → minor units, in
 * currency order (GET /api/customers/{id} `balances`, SPEC §14). Empty when it has none.
 */
export async function customerBalances(db: Kysely<Database>, customerId: string): Promise<Record<string, number>> {
  const rows = await db
    .selectFrom('customer_balance_transactions')
    .select(['currency', (eb) => eb.fn.sum<string | number>('amount').as('balance')])
    .where('customer_id', '=', customerId)
    .groupBy('currency')
    .orderBy('currency')
    .execute();
  const balances: Record<string, number> = {};
  for (const row of rows) if (Number(row.balance) !== 0) balances[row.currency] = Number(row.balance);
  return balances;
}

/**
 * PostgreSQL: takes the transaction-scoped lock of each customer's balance in `customerIds`
 * (every currency), in id order, in one statement (db/locking.ts lockKeys; SQLite has one
 * writer at a time). Reentrant. Lock order (db/locking.ts): after the subscriptions,
 * before the invoices the credit is applied to.
 */
export async function lockCustomerBalances(trx: Transaction<Database>, customerIds: readonly string[]): Promise<void> {
  if (!isPostgres(trx) || customerIds.length === 0) return;
  const sorted = [...new Set(customerIds)];
  await lockKeys(
    trx,
    sql<{
      key: string;
    }>`select 'balance:' || id as key from unnest(${sorted}::text[]) as ids(id) order by id collate "C"`,
  );
}

/** One movement of a customer's balance (SPEC §14). */
export interface BalanceTransactionInput {
  customerId: string;
  /** The customer's test clock (SPEC §11); null: real time. */
  testClockId: string | null;
  currency: string;
  /** Minor units, signed, not 0: positive gives credit, negative uses it. */
  amount: number;
  kind: BalanceTransactionKind;
  invoiceId?: string | null;
  paymentId?: string | null;
  /** Why, in the words of whoever adjusted it by hand; null for the others. */
  description?: string | null;
}

/**
 * Appends one transaction to the ledger in `trx`, dated by `clock` (the customer's clock),
 * and emits `customer.balance_changed` (data: the transaction) in the same transaction.
 * A debit (negative `amount`) must come from a caller holding lockCustomerBalances and
 * never spend more than customerBalance read under it. Returns the row. Throws on an amount
 * that is 0 or not a safe integer: a caller's bug, never a client's input.
 */
export async function recordBalanceTransaction(
  trx: Transaction<Database>,
  clock: Clock,
  input: BalanceTransactionInput,
): Promise<CustomerBalanceTransactionRow> {
  if (!Number.isSafeInteger(input.amount) || input.amount === 0) {
    throw new Error(`a balance transaction moves a non-zero integer of minor units, not ${input.amount}`);
  }
  const row: CustomerBalanceTransactionRow = {
    id: newId('balanceTransaction'),
    customer_id: input.customerId,
    currency: input.currency,
    amount: input.amount,
    kind: input.kind,
    invoice_id: input.invoiceId ?? null,
    payment_id: input.paymentId ?? null,
    description: input.description ?? null,
    created_at: clock.now().toISOString(),
    test_clock_id: input.testClockId,
  };
  await trx.insertInto('customer_balance_transactions').values(row).execute();
  await emitEvent(trx, clock, 'customer.balance_changed', toBalanceTransaction(row));
  return row;
}

/** Forgets the ledger of test clock `testClockId`'s customers (the clock is deleted with them, SPEC §11). */
export async function deleteTestClockBalanceTransactions(
  trx: Transaction<Database>,
  testClockId: string,
): Promise<void> {
  await trx.deleteFrom('customer_balance_transactions').where('test_clock_id', '=', testClockId).execute();
}
