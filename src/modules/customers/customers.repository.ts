// SQL for customers. Every read skips deleted rows. No HTTP, no rules.
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/database.ts';
import type { CustomerRow, CustomersTable } from './customers.table.ts';

export async function insertCustomer(trx: Transaction<Database>, row: CustomersTable): Promise<void> {
  await trx.insertInto('customers').values(row).execute();
}

/** The live customer with this id. */
export async function findCustomer(db: Kysely<Database>, id: string): Promise<CustomerRow | undefined> {
  return db
    .selectFrom('customers')
    .selectAll()
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
}

/** The live customer whose `email_normalized` is `normalized` (see customer-email.ts). */
export async function findCustomerByNormalizedEmail(
  db: Kysely<Database>,
  normalized: string,
): Promise<CustomerRow | undefined> {
  return db
    .selectFrom('customers')
    .selectAll()
    .where('email_normalized', '=', normalized)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
}

/**
 * Inserts `row` unless a live customer already has its `email_normalized` (a concurrent
 * creation): ON CONFLICT on the partial unique index instead of an error, so the caller's
 * transaction stays usable. Returns true when the row was inserted.
 */
export async function insertCustomerUnlessEmailTaken(
  trx: Transaction<Database>,
  row: CustomersTable,
): Promise<boolean> {
  const inserted = await trx
    .insertInto('customers')
    .values(row)
    .onConflict((oc) => oc.column('email_normalized').where('deleted_at', 'is', null).doNothing())
    .returning('id')
    .executeTakeFirst();
  return inserted !== undefined;
}

/** The live (not deleted) customers, before any select: the rows GET /api/customers lists. */
export function liveCustomers(db: Kysely<Database>) {
  return db.selectFrom('customers').where('deleted_at', 'is', null);
}

export async function updateCustomer(
  trx: Transaction<Database>,
  id: string,
  changes: Partial<Omit<CustomersTable, 'id' | 'created_at'>>,
): Promise<void> {
  await trx.updateTable('customers').set(changes).where('id', '=', id).execute();
}
