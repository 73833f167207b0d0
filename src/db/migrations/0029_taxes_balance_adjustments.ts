// Taxes and the customer's tax identity (SPEC §14), and manual credit adjustments:
// - `tax_rates`: `txr_…` records; the percentage is stored exactly as an integer of
//   ten-thousandths of a percent (19.5 % → 195000), so no float ever reaches a tax line.
// - `tax_rate_ids` (a JSON array of `txr_…` ids, '[]' when none) on subscriptions, plans and
//   customers: the most specific non-empty list applies (subscription > plan > customer >
//   DEFAULT_TAX_RATE_IDS).
// - customers: `tax_exempt` (none | exempt | reverse), `tax_ids` (a JSON array of
//   {type, value}), `address` (a JSON object or null).
// - invoices: `total_tax_amounts` (a JSON array: the tax per rate, as composed) and
//   `reverse_charge` (the customer was reverse-charged when it was issued).
// - customer_balance_transactions: `description` (a manual adjustment says why).
// Every column added has a default, so existing rows read as "no tax, no identity".
import { type Kysely, sql } from 'kysely';
import { columnTypes, isPostgres } from '../column-types.ts';

/** Whether `table` exists where this connection looks (PostgreSQL: its search_path, the app's schema). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
async function tableExists(db: Kysely<any>, table: string): Promise<boolean> {
  const found = isPostgres(db)
    ? await sql<{ found: string | null }>`select to_regclass(${table})::text as found`.execute(db)
    : await sql<{
        found: string | null;
      }>`select name as found from sqlite_master where type = 'table' and name = ${table}`.execute(db);
  return found.rows.length > 0 && found.rows[0]!.found !== null;
}

const TAX_EXEMPT = ['none', 'exempt', 'reverse'] as const;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);
  await db.schema
    .createTable('tax_rates')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('display_name', 'text', (c) => c.notNull())
    // Ten-thousandths of a percent: 0 … 1,000,000 (= 100 %).
    .addColumn('percentage_e4', t.bigint, (c) => c.notNull().check(sql`percentage_e4 between 0 and 1000000`))
    .addColumn('inclusive', t.boolean, (c) => c.notNull())
    .addColumn('country', 'text')
    .addColumn('state', 'text')
    .addColumn('jurisdiction', 'text')
    .addColumn('active', t.boolean, (c) => c.notNull())
    .addColumn('metadata', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('created_at', t.timestamp, (c) => c.notNull())
    .addColumn('updated_at', t.timestamp, (c) => c.notNull())
    .execute();
  for (const table of ['subscriptions', 'plans', 'customers']) {
    await db.schema
      .alterTable(table)
      .addColumn('tax_rate_ids', 'text', (c) => c.notNull().defaultTo('[]'))
      .execute();
  }
  const exempt = sql.join(TAX_EXEMPT.map((value) => sql.lit(value)));
  await db.schema
    .alterTable('customers')
    .addColumn('tax_exempt', 'text', (c) =>
      c
        .notNull()
        .defaultTo('none')
        .check(sql`tax_exempt in (${exempt})`),
    )
    .execute();
  await db.schema
    .alterTable('customers')
    .addColumn('tax_ids', 'text', (c) => c.notNull().defaultTo('[]'))
    .execute();
  await db.schema.alterTable('customers').addColumn('address', 'text').execute();
  await db.schema
    .alterTable('invoices')
    .addColumn('total_tax_amounts', 'text', (c) => c.notNull().defaultTo('[]'))
    .execute();
  await db.schema
    .alterTable('invoices')
    .addColumn('reverse_charge', t.boolean, (c) => c.notNull().defaultTo(sql`false`))
    .execute();
  // The migrations are a set (migrate.ts), and a migration's own test runs every other one
  // first: without 0025 there is no ledger to describe yet. Every real database has it (0025
  // is older than this one), so the column is always there where the ledger is.
  if (await tableExists(db, 'customer_balance_transactions')) {
    await db.schema.alterTable('customer_balance_transactions').addColumn('description', 'text').execute();
  }
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('customer_balance_transactions').dropColumn('description').execute();
  await db.schema.alterTable('invoices').dropColumn('reverse_charge').execute();
  await db.schema.alterTable('invoices').dropColumn('total_tax_amounts').execute();
  for (const column of ['address', 'tax_ids', 'tax_exempt']) {
    await db.schema.alterTable('customers').dropColumn(column).execute();
  }
  for (const table of ['customers', 'plans', 'subscriptions']) {
    await db.schema.alterTable(table).dropColumn('tax_rate_ids').execute();
  }
  await db.schema.dropTable('tax_rates').execute();
}
