// SQL for customers. Every read skips deleted rows, but one: the billed-to party of a document
// already issued (findBilledCustomer). No HTTP, no rules. The only writer of
// the table: each insert and delete moves the live-customer count (db/counts.ts) with it.
import type { Kysely, Transaction } from 'kysely';
import { compiledQuery, type Param } from '../../db/compiled-queries.ts';
import { addToCount } from '../../db/counts.ts';
import type { Database } from '../../db/database.ts';
import type { CustomerRow, CustomersTable } from '../../db/tables/customers.table.ts';
import { normalizeName } from './customers.name.ts';

/** A customers row as callers give it: `name_normalized` is derived here from `name`. */
export type NewCustomerRow = Omit<CustomersTable, 'name_normalized'>;

/** `row` with its `name_normalized` (customers.name.ts). */
export function withNormalizedName(row: NewCustomerRow): CustomersTable {
  return { ...row, name_normalized: row.name === null ? null : normalizeName(row.name) };
}

/** The columns the API shows (customerSchema's fields): what reads for responses select. */
export const CUSTOMER_COLUMNS = [
  'id',
  'email',
  'name',
  'phone',
  'preferred_locale',
  'external_id',
  'metadata',
  'test_clock_id',
  'tax_exempt',
  'tax_ids',
  'tax_rate_ids',
  'address',
  'created_at',
  'updated_at',
] as const;

/** A customers row as far as the API shows it. */
export type CustomerColumns = Pick<CustomerRow, (typeof CUSTOMER_COLUMNS)[number]>;

/** Inserts a live customer and counts it. */
export async function insertCustomer(trx: Transaction<Database>, row: NewCustomerRow): Promise<void> {
  await trx.insertInto('customers').values(withNormalizedName(row)).execute();
  await addToCount(trx, 'customers', 1);
}

const customerById = compiledQuery((db, param: Param<{ id: string }>) =>
  db.selectFrom('customers').select(CUSTOMER_COLUMNS).where('id', '=', param('id')).where('deleted_at', 'is', null),
);

/** The live customer with this id: the columns the API shows (one compiled statement). */
export async function findCustomer(db: Kysely<Database>, id: string): Promise<CustomerColumns | undefined> {
  return customerById.executeTakeFirst(db, { id });
}

/**
 * The name, email and preferred locale of customer `id`, deleted or not: who a document already issued to it
 * (the hosted invoice page, SPEC §9) is billed to. Undefined when no such row exists.
 */
export async function findBilledCustomer(
  db: Kysely<Database>,
  id: string,
): Promise<Pick<CustomerRow, 'name' | 'email' | 'preferred_locale' | 'address' | 'tax_ids'> | undefined> {
  return db
    .selectFrom('customers')
    .select(['name', 'email', 'preferred_locale', 'address', 'tax_ids'])
    .where('id', '=', id)
    .executeTakeFirst();
}

/** The live customer whose `email_normalized` is `normalized` (see customers.email.ts). */
export async function findCustomerByNormalizedEmail(
  db: Kysely<Database>,
  normalized: string,
): Promise<CustomerRow | undefined> {
  return customerByNormalizedEmail.executeTakeFirst(db, { normalized });
}

/** Compiled once: provider-event attribution runs it for every payment with an email. */
const customerByNormalizedEmail = compiledQuery((db, param: Param<{ normalized: string }>) =>
  db
    .selectFrom('customers')
    .selectAll()
    .where('email_normalized', '=', param('normalized'))
    .where('deleted_at', 'is', null),
);

/**
 * Inserts `row` unless a live customer already has its `email_normalized` (a concurrent
 * creation): ON CONFLICT on the partial unique index instead of an error, so the caller's
 * transaction stays usable. Returns true when the row was inserted (and counted).
 */
export async function insertCustomerUnlessEmailTaken(
  trx: Transaction<Database>,
  row: NewCustomerRow,
): Promise<boolean> {
  const inserted = await trx
    .insertInto('customers')
    .values(withNormalizedName(row))
    .onConflict((oc) => oc.column('email_normalized').where('deleted_at', 'is', null).doNothing())
    .returning('id')
    .executeTakeFirst();
  if (inserted === undefined) return false;
  await addToCount(trx, 'customers', 1);
  return true;
}

/** The live (not deleted) customers, before any select: the rows GET /api/customers lists. */
export function liveCustomers(db: Kysely<Database>) {
  return db.selectFrom('customers').where('deleted_at', 'is', null);
}

/** Changes a customer's fields (a new `name` its `name_normalized` too); deleting is markCustomerDeleted (it moves the count). */
export async function updateCustomer(
  trx: Transaction<Database>,
  id: string,
  changes: Partial<Omit<CustomersTable, 'id' | 'created_at' | 'deleted_at' | 'name_normalized'>>,
): Promise<void> {
  const set =
    changes.name === undefined
      ? changes
      : { ...changes, name_normalized: changes.name === null ? null : normalizeName(changes.name) };
  await trx.updateTable('customers').set(set).where('id', '=', id).execute();
}

/**
 * Marks a live customer deleted at `now` (ISO; the row stays, so payments keep their owner)
 * and uncounts it. The caller holds the customer's lock (lockCustomer).
 */
export async function markCustomerDeleted(trx: Transaction<Database>, id: string, now: string): Promise<void> {
  await trx.updateTable('customers').set({ deleted_at: now, updated_at: now }).where('id', '=', id).execute();
  await addToCount(trx, 'customers', -1);
}

/**
 * Deletes customers `customerIds` (`cus_…`, locked by the caller) outright and uncounts the
 * `liveCount` of them that were not marked deleted (the kept total counts live customers
 * only; the caller reads it under the same locks): a test clock's delete (SPEC §11
 * "Deleting"), after everything they own is gone or detached. No events.
 */
export async function deleteCustomers(
  trx: Transaction<Database>,
  customerIds: readonly string[],
  liveCount: number,
): Promise<void> {
  if (customerIds.length === 0) return;
  await trx.deleteFrom('customers').where('id', 'in', customerIds).execute();
  await addToCount(trx, 'customers', -liveCount);
}
