// SQL for customers. Every read skips deleted rows. No HTTP, no rules.
import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from '../../db/database.ts';
import { type ListParams, pageOf } from '../../http/lists.ts';
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

/** The live customer with this email, compared case-insensitively. */
export async function findCustomerByEmail(
  db: Kysely<Database>,
  email: string,
): Promise<CustomerRow | undefined> {
  return db
    .selectFrom('customers')
    .selectAll()
    .where(sql<string>`lower(email)`, '=', email.toLowerCase())
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
}

/** A page of live customers in the requested order. */
export async function listCustomers(db: Kysely<Database>, params: ListParams): Promise<CustomerRow[]> {
  return pageOf(db.selectFrom('customers').selectAll().where('deleted_at', 'is', null), params).execute();
}

export async function updateCustomer(
  trx: Transaction<Database>,
  id: string,
  changes: Partial<Omit<CustomersTable, 'id' | 'created_at'>>,
): Promise<void> {
  await trx.updateTable('customers').set(changes).where('id', '=', id).execute();
}
